package runflags

import (
	"io"

	"github.com/spf13/pflag"
)

// ParseArgs parses args, a campaign's run flags, as `joulebench run`
// parses its own command line: with the flags every command takes
// (Global), a run's (Define) and those extra registers (the run command's
// own, e.g. --spec). Nothing is printed; the error is the flag parser's.
func ParseArgs(args []string, reg Registries, extra func(*pflag.FlagSet)) (*pflag.FlagSet, error) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.SetOutput(io.Discard)
	Global(f)
	Define(f, reg)
	if extra != nil {
		extra(f)
	}
	return f, f.Parse(args)
}

// Resolve is a run command's settings: its command line's (Build: the
// flags f over the configuration v, args[0] the profile), or, when f
// gives --spec, the spec file's (ReadSpec), stored through set into the
// configuration so that the rest of the command reads them (spec true).
func Resolve(args []string, f *pflag.FlagSet, v Values, set func(flag string, value any), reg Registries) (s Settings, spec bool, err error) {
	if !f.Changed("spec") {
		return Build(args[0], f, v, reg), false, nil
	}
	if s, err = ReadSpec(f, v, reg); err != nil {
		return Settings{}, true, err
	}
	s.Store(set)
	return s, true, nil
}
