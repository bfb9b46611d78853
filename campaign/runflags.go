package campaign

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workload"
)

// CheckRunFlags checks one list of a campaign's run flags, parsed in f
// with the run command's flag set: no argument beyond the flags (the
// profile is the campaign's), and the values of the flags that take one
// of a fixed set: --telemetry (one of telemetryNames, several in one
// value separated by commas or spaces), --engine (a kind of kinds),
// --dataset-format and --format.
func CheckRunFlags(f *pflag.FlagSet, kinds *engines.Registry, telemetryNames []string) error {
	if f.NArg() > 0 {
		return fmt.Errorf("%q is not a flag: a campaign's args are run flags (the profile is the campaign's profile:)", f.Arg(0))
	}
	if f.Changed("telemetry") {
		given, _ := f.GetStringArray("telemetry")
		for _, g := range given {
			for _, v := range strings.FieldsFunc(g, func(r rune) bool { return r == ',' || r == ' ' }) {
				if !slices.Contains(telemetryNames, v) {
					return fmt.Errorf("--telemetry %q: valid are %s", v, strings.Join(telemetryNames, ", "))
				}
			}
		}
	}
	if f.Changed("engine") {
		given, _ := f.GetStringSlice("engine")
		for _, k := range given {
			if _, ok := kinds.Lookup(k); !ok {
				return fmt.Errorf("--engine %q: valid are %s", k, strings.Join(kinds.Kinds(), ", "))
			}
		}
	}
	if f.Changed("dataset-format") {
		v, _ := f.GetString("dataset-format")
		if !slices.Contains(workload.Formats, v) {
			return fmt.Errorf("--dataset-format %q: valid are %s", v, strings.Join(workload.Formats, ", "))
		}
	}
	if f.Changed("format") {
		v, _ := f.GetString("format")
		if err := report.CheckFormat(v); err != nil {
			return err
		}
	}
	return nil
}
