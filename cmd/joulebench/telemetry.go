package main

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/telemetry"
	telall "github.com/joulebench/joulebench/telemetry/all"
	"github.com/joulebench/joulebench/telemetry/replay"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// Source names that the run (run.go, cooldown.go) compares with.
const (
	telAuto   = telemetry.Auto
	telSim    = simtel.Name
	telReplay = replay.Name
)

// telemetryChoices are the values of --telemetry (a campaign's run args
// are checked against them).
var telemetryChoices = telall.Registry().Names()

// telemetrySources is the registry of the power sources a run may name.
func telemetrySources() *telemetry.Registry { return telall.Registry() }

// telemetryFlags registers --telemetry and every source's flags.
func telemetryFlags(f *pflag.FlagSet) { telemetrySources().Flags(f) }

// telemetryOpts are the sources --telemetry names, checked with every
// source's flags.
type telemetryOpts struct {
	sel telemetry.Selection
}

func (a *app) telemetryOptions() (telemetryOpts, error) {
	sel, err := telemetrySources().Check(a.telemetryFlag(), a.v)
	if err != nil {
		return telemetryOpts{}, withCode(exitInvalid, err)
	}
	return telemetryOpts{sel: sel}, nil
}

// telemetryFlag is --telemetry as given: repeated, or one value that may
// list several separated by commas or spaces (JOULEBENCH_TELEMETRY,
// the config file).
func (a *app) telemetryFlag() []string {
	var out []string
	for _, v := range a.v.GetStringSlice("telemetry") {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}

// has reports whether --telemetry names source c.
func (o telemetryOpts) has(c string) bool { return o.sel.Has(c) }

// telemetryLogf logs a source's warning.
func (a *app) telemetryLogf(msg string) { a.log.Warn().Str("component", "telemetry").Msg(msg) }

// setupTelemetry picks the power source of a run. A nil source means none.
// The returned info (run.json "telemetry") names the source, how auto chose
// it, and each device's energy method; the devices themselves go to
// run.json's hardware when sampling starts.
func (a *app) setupTelemetry(es *engineSetup, clock *workflow.Clock) (telemetry.Source, archive.TelemetryInfo, error) {
	o, err := a.telemetryOptions()
	if err != nil {
		return nil, archive.TelemetryInfo{}, err
	}
	env := telemetry.Env{Clock: telemetry.WallClock, Logf: a.telemetryLogf, NoSource: a.warnNoPower}
	if clock != nil {
		env.Clock = clock.Now
	}
	if es != nil && es.SimLoad != nil {
		env.SimulatedGPUs = simtel.GPUs(es.SimTelemetry, es.SimLoad)
	}
	src, info, err := telemetrySources().Open(context.Background(), o.sel, a.v, env)
	if err != nil {
		return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
	}
	return src, info, nil
}

// warnNoPower logs auto's "no power source found" once per command: an
// asiai run looks for a source per engine and for the cooldown between
// them, and printed this three times.
func (a *app) warnNoPower(msg string) {
	if !a.noPowerWarned {
		a.noPowerWarned = true
		a.telemetryLogf(msg)
	}
}
