package telemetry

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
)

// Auto is the choice (--telemetry auto) that opens the source this
// machine and these flags point to: see Descriptor.Auto.
const Auto = "auto"

// SelectFlag is the flag that names the sources (--telemetry).
const SelectFlag = "telemetry"

// Descriptor is everything joulebench asks about one power source: its
// name, the flags it takes, how it checks them, opens, lists its devices
// for `joulebench devices`, and its place in what auto prefers. A source
// package exports one (a function returning it, so that nothing is shared
// mutable state) and a Registry collects them.
type Descriptor struct {
	// Name is the name on the command line (--telemetry NAME) and in
	// run.json's telemetry source.
	Name string
	// Flags registers the flags the source takes on f (nil: none). Their
	// values reach Check, Open and Probe as Values, by flag name.
	Flags func(f *pflag.FlagSet)
	// Check validates the source's flag values against the sources sel
	// names, before anything opens (nil: nothing to check): a flag of
	// this source given for another, a flag the source needs. Its errors
	// name the flags.
	Check func(v Values, sel Selection) error
	// Open opens the source. It returns the Source (nil: nothing is
	// measured) and run.json's telemetry info: the source's name, a note
	// that says how it reads and each device's energy method.
	Open func(ctx context.Context, v Values, env Env) (Source, record.TelemetryInfo, error)
	// Probe lists the source's devices for `joulebench devices`; nil:
	// Open, then ListDevices with the info's note as the detail.
	Probe func(ctx context.Context, v Values, env Env) (Listing, error)
	// Alone says the source cannot be combined with others (none).
	Alone bool
	// FollowsSimulatedEngine says the source is the simulated engine's
	// own GPUs (sim): it measures nothing without that engine, and the
	// cooldown between runs of the simulated engine reads it.
	FollowsSimulatedEngine bool
	// Replays says the source plays back a recording (replay): real power,
	// but not the run's own, which the progress display says.
	Replays bool
	// Auto is the source's place in --telemetry auto; nil: auto never
	// opens it.
	Auto *AutoRole
}

// AutoRole is a source's place in what --telemetry auto prefers. Auto
// opens the source that one of its own flags names (Named: dcgm with
// --dcgm-url); with none named, it tries the sources that have a Rank,
// lowest first, and takes the first that opens; with none that opens, it
// measures nothing and says why.
type AutoRole struct {
	// Flag is the source's flag (without dashes) whose value names the
	// source to auto, e.g. "dcgm-url"; Named reports whether it was given.
	// Empty Flag: no flag names the source.
	Flag  string
	Named func(Values) bool
	// Rank, when above zero, makes auto try the source when no flag names
	// one, in ascending order of rank.
	Rank int
	// How is what run.json's note says of why auto took a ranked source
	// ("NVIDIA GPU found").
	How string
	// Skip, when set, says whether auto passes the source by without
	// trying it, and why (empty: it says nothing of it).
	Skip func(Env) (why string, skip bool)
	// Fatal reports whether an error opening the source ends auto with
	// that error (the source is there but cannot be measured as asked);
	// nil or false: auto records the error as why and tries the next.
	Fatal func(error) bool
	// Hint is added to the warning of a run whose auto found no source
	// ("For GPUs on other hosts use ...").
	Hint string
	// ProbeWhy is what `joulebench devices` lists of this source among
	// the reasons there is none ("dcgm: no --dcgm-url given ...").
	ProbeWhy string
}

// Values are the resolved values of the telemetry flags (command line,
// environment, config file), by flag name. A *viper.Viper is one;
// FlagValues reads a parsed pflag.FlagSet.
type Values interface {
	GetString(key string) string
	GetStringSlice(key string) []string
	GetBool(key string) bool
	GetFloat64(key string) float64
}

// Env is what a source may take from the run beside its flags.
type Env struct {
	// Clock is the run clock; nil lets each source use its default.
	Clock Clock
	// Logf receives the sources' warnings (nil: dropped).
	Logf func(string)
	// SimulatedGPUs, set when the run's engine is simulated, returns that
	// engine's GPUs read on the given clock.
	SimulatedGPUs func(Clock) Source
	// NoSource, when set, is told the warning of an auto that found no
	// source (the caller may say it once however often it opens).
	NoSource func(warning string)
}

// logf is Env.Logf, or nothing.
func (e Env) logf() func(string) {
	if e.Logf != nil {
		return e.Logf
	}
	return func(string) {}
}

// Selection is the sources --telemetry names, checked: each registered,
// none twice, auto and a source that stands alone only alone.
type Selection struct {
	names []string
}

// Names are the selected sources in the order given.
func (s Selection) Names() []string { return slices.Clone(s.names) }

// Has reports whether name is selected.
func (s Selection) Has(name string) bool { return slices.Contains(s.names, name) }

// One is the source when exactly one is selected, else "".
func (s Selection) One() string {
	if len(s.names) == 1 {
		return s.names[0]
	}
	return ""
}

// String is the selected names joined by " + ".
func (s Selection) String() string { return strings.Join(s.names, " + ") }
