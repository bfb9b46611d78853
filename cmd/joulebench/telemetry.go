package main

import (
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/runner/runflags"
	"github.com/joulebench/joulebench/telemetry"
	telall "github.com/joulebench/joulebench/telemetry/all"
)

// telemetryChoices are the values of --telemetry (a campaign's run args
// are checked against them).
var telemetryChoices = telall.Registry().Names()

// telemetrySources is the registry of the power sources a run may name.
func telemetrySources() *telemetry.Registry { return telall.Registry() }

// telemetryFlags registers --telemetry and every source's flags.
func telemetryFlags(f *pflag.FlagSet) { runflags.TelemetryFlags(f, telemetrySources()) }

// telemetry maps --telemetry and the sources' flags onto the run
// library's power source options: it opens and checks the run's source.
func (a *app) telemetry() runner.Telemetry {
	return runner.Telemetry{Registry: telemetrySources(), Given: a.v.GetStringSlice("telemetry"), Values: a.v,
		Logf: a.telemetryLogf, NoSource: a.warnNoPower}
}

// telemetryOptions are the sources --telemetry names, checked with every
// source's flags.
func (a *app) telemetryOptions() (telemetry.Selection, error) { return a.telemetry().Selection() }

// telemetryLogf logs a source's warning.
func (a *app) telemetryLogf(msg string) { a.log.Warn().Str("component", "telemetry").Msg(msg) }
