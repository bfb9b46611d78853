package telemetry

import (
	"strconv"

	"github.com/spf13/pflag"
)

// FlagValues reads the telemetry flags from a parsed flag set, for a
// caller without a configuration layer: a flag not defined in f reads as
// its type's zero value.
func FlagValues(f *pflag.FlagSet) Values { return flagValues{f} }

type flagValues struct{ f *pflag.FlagSet }

func (v flagValues) GetString(key string) string {
	if fl := v.f.Lookup(key); fl != nil {
		return fl.Value.String()
	}
	return ""
}

func (v flagValues) GetStringSlice(key string) []string {
	fl := v.f.Lookup(key)
	switch {
	case fl == nil:
		return nil
	case isSlice(fl):
		return fl.Value.(pflag.SliceValue).GetSlice()
	case fl.Value.String() == "":
		return nil
	}
	return []string{fl.Value.String()}
}

func isSlice(fl *pflag.Flag) bool {
	_, ok := fl.Value.(pflag.SliceValue)
	return ok
}

func (v flagValues) GetBool(key string) bool {
	if fl := v.f.Lookup(key); fl != nil {
		b, _ := strconv.ParseBool(fl.Value.String())
		return b
	}
	return false
}

func (v flagValues) GetFloat64(key string) float64 {
	if fl := v.f.Lookup(key); fl != nil {
		x, _ := strconv.ParseFloat(fl.Value.String(), 64)
		return x
	}
	return 0
}
