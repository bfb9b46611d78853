package telemetry

import (
	"context"
	"errors"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
)

// ClockSyncReporter is an optional ability of a Source whose samples come
// stamped by another clock (a joulebench agent on another node): it
// measured each such clock's offset to the run clock when it opened, maps
// the samples onto the run clock with it, and measures the offsets again
// at the end of the run. run.json's telemetry.clock_sync holds what it
// reports.
type ClockSyncReporter interface {
	// ClockSync returns one entry per clock the source reads. With end
	// set it first measures each clock's offset at the end of the run
	// (once: a later call returns the same end); an entry whose end could
	// not be measured is returned without it, and the error says why.
	ClockSync(ctx context.Context, end bool) ([]record.ClockSync, error)
}

var _ ClockSyncReporter = (*Multi)(nil)

// ClockSync concatenates the entries of the sources that report them, in
// the sources' order; the errors of each are joined, naming the source.
func (m *Multi) ClockSync(ctx context.Context, end bool) ([]record.ClockSync, error) {
	var out []record.ClockSync
	var errs []error
	for _, s := range m.srcs {
		cr, ok := s.(ClockSyncReporter)
		if !ok {
			continue
		}
		cs, err := cr.ClockSync(ctx, end)
		out = append(out, cs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return out, errors.Join(errs...)
}

// RePlacer is an optional ability of a ClockSyncReporter that streams its
// samples placed with the offsets measured at the start: once the end
// offsets are measured (ClockSync with end), RePlace gives the time of a
// sample of device that was placed at t, with the offset interpolated
// between the start and the end, or false to keep t (a device it does not
// read, a clock whose end is not known). The run rewrites power.csv with
// it (steps.RecordClockSync).
type RePlacer interface {
	RePlace(device string, t float64) (float64, bool)
}

var _ RePlacer = (*Multi)(nil)

// RePlace asks each source that places again, in the sources' order; the
// first that knows the device answers.
func (m *Multi) RePlace(device string, t float64) (float64, bool) {
	for _, s := range m.srcs {
		if rp, ok := s.(RePlacer); ok {
			if nt, ok := rp.RePlace(device, t); ok {
				return nt, true
			}
		}
	}
	return t, false
}
