package powermetrics

import (
	"context"
	"fmt"
	"runtime"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry powermetrics).
const Name = "powermetrics"

// Descriptor is the powermetrics source: the Apple GPU, auto's choice on
// macOS when there is no NVIDIA GPU.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Open: func(ctx context.Context, _ telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			src, err := Open(Options{Clock: env.Clock, Logf: env.Logf})
			if err != nil {
				return nil, record.TelemetryInfo{}, err
			}
			devs, _ := src.Devices(ctx)
			return src, record.TelemetryInfo{Source: Name, Note: fmt.Sprintf(
				"macOS powermetrics (gpu_power and thermal samplers every %d ms): estimated Apple GPU power; each sample's energy summed into a counter; %s",
				DefaultIntervalMS, telemetry.DeviceSummary(devs))}, nil
		},
		Auto: &telemetry.AutoRole{Rank: 3, How: "macOS", Skip: func(telemetry.Env) (string, bool) {
			if runtime.GOOS != "darwin" {
				return "powermetrics: macOS only (this is " + runtime.GOOS + ")", true
			}
			return "", false
		}},
	}
}
