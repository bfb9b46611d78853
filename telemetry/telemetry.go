// Package telemetry reads GPU power, energy and memory from a Source and
// turns the readings into record.PowerSample rows with a Sampler.
//
// A Source knows nothing about engines or metrics: it answers "what does
// each device draw now". The Sampler owns the timing: a ticker at the
// sampling interval plus extra samples on demand at stage boundaries, each
// stamped with the run clock and handed to a sink (normally the archive
// writer).
//
// Each source package exports a Descriptor (its name, flags, checks, how it
// opens and lists its devices, its place in what --telemetry auto
// prefers); a Registry collects them, and telemetry/all lists the
// built-in ones. The command line only registers the registry's flags and
// asks it to check, open or list what --telemetry names.
package telemetry

import (
	"context"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Reading is one device's state at one instant.
type Reading struct {
	// Device is the record.Device ID this reading belongs to.
	Device string
	// PowerW is the instantaneous board power in watts.
	PowerW float64
	// EnergyJ is the device's cumulative energy counter in joules; valid
	// only when HasEnergy is true.
	EnergyJ   float64
	HasEnergy bool
	// MemUsedBytes is the device memory in use, -1 when unknown.
	MemUsedBytes int64
	// T, when non-zero, is the instant (run clock, Unix seconds) the source
	// took the reading. Zero means "now": the Sampler stamps it with its
	// clock after Read returns. Sources that model time themselves (sim,
	// replay) set it so that power.csv matches their model exactly.
	T float64
}

// Source is a power/energy telemetry backend (sim, nvml, powermetrics,
// prometheus, replay, none).
type Source interface {
	// Name is the source kind as named on the command line: "sim", "nvml", ...
	Name() string
	// Devices lists the measured devices; their IDs are the Device field of
	// every Reading.
	Devices(ctx context.Context) ([]record.Device, error)
	// Read returns one reading per device, now.
	Read(ctx context.Context) ([]Reading, error)
	// Close releases the backend.
	Close() error
}

// DriverReporter is a source that knows the GPU driver version (for
// run.json's hardware).
type DriverReporter interface {
	Driver() string
}

// Clock returns the current time of the run clock in Unix seconds.
type Clock func() float64

// WallClock is the default run clock: time.Now as Unix seconds with
// nanosecond resolution.
func WallClock() float64 {
	return float64(time.Now().UnixNano()) / 1e9
}

// ToSamples converts readings to power.csv rows. Readings without their own
// timestamp get t.
func ToSamples(t float64, readings []Reading) []record.PowerSample {
	out := make([]record.PowerSample, len(readings))
	for i, r := range readings {
		ts := t
		if r.T != 0 {
			ts = r.T
		}
		out[i] = record.PowerSample{
			T:            ts,
			Device:       r.Device,
			PowerW:       r.PowerW,
			EnergyJ:      r.EnergyJ,
			HasEnergy:    r.HasEnergy,
			MemUsedBytes: r.MemUsedBytes,
		}
	}
	return out
}
