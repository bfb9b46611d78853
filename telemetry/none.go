package telemetry

import (
	"context"

	"github.com/joulebench/joulebench/archive"
)

// None is the Source for --telemetry none: no devices, no readings. Energy
// metrics of such a run are not applicable.
type None struct{}

var _ Source = None{}

// NewNone returns the empty source.
func NewNone() None { return None{} }

// Name returns "none".
func (None) Name() string { return "none" }

// Devices returns no devices.
func (None) Devices(context.Context) ([]archive.Device, error) { return nil, nil }

// Read returns no readings.
func (None) Read(context.Context) ([]Reading, error) { return nil, nil }

// Close does nothing.
func (None) Close() error { return nil }
