//go:build !cgo

package nvml

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// errNoCgo is what Open returns in a build without cgo.
var errNoCgo = fmt.Errorf("nvml: built without cgo: %w (rebuild with CGO_ENABLED=1 on the GPU machine); %s", ErrUnavailable, alternatives)

// Source is the NVML source; in a build without cgo it cannot be opened.
type Source struct{}

var (
	_ telemetry.Source         = (*Source)(nil)
	_ telemetry.DriverReporter = (*Source)(nil)
)

// Open reports that this build has no NVML (go-nvml needs cgo).
func Open(Options) (*Source, error) { return nil, errNoCgo }

// Name returns "nvml".
func (*Source) Name() string { return Name }

// Inventory returns nothing: no NVML in this build.
func (*Source) Inventory() Inventory { return Inventory{} }

// Driver returns "".
func (*Source) Driver() string { return "" }

// Devices reports that this build has no NVML.
func (*Source) Devices(context.Context) ([]record.Device, error) { return nil, errNoCgo }

// Read reports that this build has no NVML.
func (*Source) Read(context.Context) ([]telemetry.Reading, error) { return nil, errNoCgo }

// Throttled reports nothing.
func (*Source) Throttled() (bool, string) { return false, "" }

// Anomalies reports nothing.
func (*Source) Anomalies() []telemetry.Anomaly { return nil }

// Close does nothing.
func (*Source) Close() error { return nil }

// OpenSettings reports that this build has no NVML (go-nvml needs cgo).
func OpenSettings() (gpusettings.Controller, error) { return nil, errNoCgo }
