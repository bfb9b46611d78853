package telemetry

import (
	"context"

	"github.com/joulebench/joulebench/archive/record"
)

// None is the Source for --telemetry none: no devices, no readings. Energy
// metrics of such a run are not applicable.
type None struct{}

var _ Source = None{}

// NewNone returns the empty source.
func NewNone() None { return None{} }

// Name returns "none".
func (None) Name() string { return NoneName }

// Devices returns no devices.
func (None) Devices(context.Context) ([]record.Device, error) { return nil, nil }

// Read returns no readings.
func (None) Read(context.Context) ([]Reading, error) { return nil, nil }

// Close does nothing.
func (None) Close() error { return nil }

// NoneName is the name of the source that measures nothing
// (--telemetry none); auto's choice when it finds no source.
const NoneName = "none"

// NoneDescriptor is --telemetry none: nothing is measured, by choice, and
// energy metrics are not applicable. It stands alone.
func NoneDescriptor() Descriptor {
	return Descriptor{
		Name:  NoneName,
		Alone: true,
		Open: func(context.Context, Values, Env) (Source, record.TelemetryInfo, error) {
			return nil, record.TelemetryInfo{Source: NoneName, Declined: true,
				Note: "energy not measured (--telemetry none): energy metrics are not applicable"}, nil
		},
		Probe: func(context.Context, Values, Env) (Listing, error) {
			return Listing{Source: NoneName, Declined: true, Detail: "--telemetry none: nothing is measured"}, nil
		},
	}
}
