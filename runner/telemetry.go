package runner

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Telemetry opens the power sources that the telemetry options name, from
// a registry of sources (telemetry/all's): its Open and Check are a
// Spec's OpenTelemetry and CheckTelemetry.
type Telemetry struct {
	// Registry holds the sources a run may name.
	Registry *telemetry.Registry
	// Given are the --telemetry values as given: repeated, or one value
	// that lists several separated by commas or spaces (an environment
	// variable, a configuration file).
	Given []string
	// Values are the values of the sources' flags.
	Values telemetry.Values
	// Logf logs a source's warning; NoSource logs auto's "no power source
	// found" (nil: Logf; OnceLogf logs it once however often it is said).
	Logf, NoSource func(string)
}

// SplitTelemetry splits --telemetry values that list several sources
// (separated by commas or spaces) into one name each.
func SplitTelemetry(given []string) []string {
	var out []string
	for _, v := range given {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}

// Selection is the sources the options name, checked with every source's
// flags; an error is invalid input (CodeInvalid).
func (t Telemetry) Selection() (telemetry.Selection, error) {
	sel, err := t.Registry.Check(SplitTelemetry(t.Given), t.Values)
	if err != nil {
		return telemetry.Selection{}, WithCode(CodeInvalid, err)
	}
	return sel, nil
}

// Check checks the power source options for an engine: the simulated GPU
// (--telemetry sim) follows the simulated engine only.
func (t Telemetry) Check(simulatedEngine bool) error {
	sel, err := t.Selection()
	if err != nil {
		return err
	}
	for _, n := range sel.Names() {
		if t.Registry.Any([]string{n}, followsSim) && !simulatedEngine {
			return Invalidf("--telemetry %s: the simulated GPU follows the simulated engine only (--engine sim)", n)
		}
	}
	return nil
}

// Open opens a run's power source as the options ask. A nil source means
// none; the info (run.json "telemetry") names the source, how auto chose
// it, and each device's energy method. The cooldown between runs of the
// simulated engine uses its GPU with no engine loaded, unless the options
// name a real source. Opening does not take the run's cancellation: the
// run closes the source, not its context.
func (t Telemetry) Open(ctx context.Context, env TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
	clock := telemetry.WallClock
	if env.Clock != nil {
		clock = env.Clock.Now
	}
	if env.Cooldown {
		given := SplitTelemetry(t.Given)
		if env.Sim != nil && (len(given) == 0 || slices.Equal(given, []string{telemetry.Auto}) || t.Registry.Any(given, followsSim)) {
			return simtel.New(env.Sim.Config, env.Sim.Load, clock), record.TelemetryInfo{}, nil
		}
		env.Sim = nil
	}
	sel, err := t.Selection()
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	tenv := telemetry.Env{Clock: clock, Logf: t.Logf, NoSource: t.NoSource}
	switch {
	case env.Sim != nil && env.Sim.Nodes != nil:
		tenv.SimulatedGPUs = simtel.NodesGPUs(env.Sim.Nodes)
	case env.Sim != nil:
		tenv.SimulatedGPUs = simtel.GPUs(env.Sim.Config, env.Sim.Load)
	}
	src, info, err := t.Registry.Open(context.WithoutCancel(ctx), sel, t.Values, tenv)
	if err != nil {
		return nil, record.TelemetryInfo{}, WithCode(CodeInvalid, err)
	}
	return src, info, nil
}

// OnceLogf is logf that logs only its first message: auto's "no power
// source found" is looked for per engine and for the cooldown between
// them, and was printed three times.
func OnceLogf(logf func(string)) func(string) {
	said := false
	return func(msg string) {
		if !said {
			said = true
			logf(msg)
		}
	}
}

// followsSim reports whether a source is the simulated engine's GPUs.
func followsSim(d telemetry.Descriptor) bool { return d.FollowsSimulatedEngine }

// PowerLabel is what the progress display says of the power it shows:
// "replayed" (a recording played back, real power but not this run's:
// a source that Replays), "simulated", or "" for measured power.
func (t Telemetry) PowerLabel(tel record.TelemetryInfo, simulatedEngine bool) string {
	switch {
	case t.Registry.Any([]string{tel.Source}, func(d telemetry.Descriptor) bool { return d.Replays }):
		return "replayed"
	case tel.Simulated || simulatedEngine:
		return "simulated"
	}
	return ""
}

// discardRefused ends a run whose power source refused to open as
// invalid input (CodeInvalid: an agent without its token, a refused token,
// a clock too slow or too far off to place samples) before anything was
// measured: its run directory, which holds only what the run wrote about
// itself, is removed once everything in it is closed, so that a refusal
// leaves nothing behind, as every other check of a run's inputs does
// (docs/commands.md). A run with anything measured (a cooldown recorded in
// its events) keeps its directory. It returns err.
func (e *engineRun) discardRefused(err error) error {
	if CodeOf(err) != CodeInvalid || e.out == nil || e.dir == "" || len(e.out.Meta().Events) > 0 {
		return err
	}
	dir := e.dir
	// The closers run last opened first: this one, first in the list,
	// runs after the archive and the logs are closed.
	e.closers = append([]closer{{"the refused run's directory " + dir, func() error { return os.RemoveAll(dir) }}}, e.closers...)
	e.dir = ""
	return err
}
