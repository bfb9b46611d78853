package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry sim).
const Name = "sim"

// Descriptor is the simulated GPUs of the simulated engine: auto's first
// choice when that engine runs.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name:                   Name,
		FollowsSimulatedEngine: true,
		Open: func(ctx context.Context, _ telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			if env.SimulatedGPUs == nil {
				return nil, record.TelemetryInfo{}, errors.New("--telemetry sim: the simulated GPU follows the simulated engine only (--engine sim)")
			}
			src := env.SimulatedGPUs(env.Clock)
			devs, _ := src.Devices(ctx)
			if nodes, ok := src.(*Nodes); ok {
				// Several simulated nodes, each on its own clock:
				// their offsets are measured before the first read.
				cs, err := nodes.Sync(ctx)
				if err != nil {
					return nil, record.TelemetryInfo{}, fmt.Errorf("--telemetry sim: %w", err)
				}
				return src, record.TelemetryInfo{Source: Name, Simulated: true, Note: nodes.Note(devs), ClockSync: cs}, nil
			}
			return src, record.TelemetryInfo{Source: Name, Simulated: true,
				Note: "simulated GPU power tied to the simulated engine's load; " + telemetry.DeviceSummary(devs)}, nil
		},
		Probe: func(ctx context.Context, _ telemetry.Values, _ telemetry.Env) (telemetry.Listing, error) {
			return telemetry.ListDevices(ctx, New(DefaultConfig(), nil, nil), "the built-in simulator's GPUs (with --engine sim)")
		},
		Auto: &telemetry.AutoRole{Rank: 1, How: "the simulated engine runs", Skip: func(env telemetry.Env) (string, bool) {
			return "", env.SimulatedGPUs == nil
		}},
	}
}

// GPUs is Env.SimulatedGPUs of a simulated engine: GPUs of cfg that
// follow load.
func GPUs(cfg Config, load Load) func(telemetry.Clock) telemetry.Source {
	return func(clock telemetry.Clock) telemetry.Source { return New(cfg, load, clock) }
}
