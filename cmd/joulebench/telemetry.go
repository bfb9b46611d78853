package main

import (
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// telemetryFlags registers the flags that choose the power source.
func telemetryFlags(f *pflag.FlagSet) {
	f.String("telemetry", "auto", "power source: auto, sim, none")
}

// setupTelemetry picks the power source of a run. A nil source means none.
func (a *app) setupTelemetry(es *engineSetup, clock *workflow.Clock) (telemetry.Source, archive.TelemetryInfo, error) {
	choice := a.v.GetString("telemetry")
	switch choice {
	case "auto", "sim":
		if es.SimLoad == nil {
			return nil, archive.TelemetryInfo{}, invalidf("--telemetry %s: the simulated GPU follows the simulated engine only", choice)
		}
		return simtel.New(es.SimTelemetry, es.SimLoad, telemetry.Clock(clock.Now)),
			archive.TelemetryInfo{Source: "sim", Simulated: true, Note: "simulated GPU power tied to the simulated engine's load"}, nil
	case "none":
		return nil, archive.TelemetryInfo{Source: "none", Note: "no power source: energy metrics are not applicable"}, nil
	}
	return nil, archive.TelemetryInfo{}, invalidf("--telemetry %q: valid here are auto, sim, none", choice)
}
