package telemetry

import (
	"context"
	"errors"

	"github.com/joulebench/joulebench/archive/record"
)

// ClockSyncReporter is a source that reads clocks other than the run
// clock (other nodes): it measured each one's offset when it opened (its
// run.json telemetry.clock_sync entries) and measures them again at the
// end of the run, when sampling has stopped.
type ClockSyncReporter interface {
	// EndClockSync measures every clock's offset at the end and returns
	// its entries with the start and the end offsets.
	EndClockSync(ctx context.Context) ([]record.ClockSync, error)
}

var _ ClockSyncReporter = (*Multi)(nil)

// EndClockSync joins the entries of the sources that report them.
func (m *Multi) EndClockSync(ctx context.Context) ([]record.ClockSync, error) {
	var out []record.ClockSync
	var errs []error
	for _, s := range m.srcs {
		if cr, ok := s.(ClockSyncReporter); ok {
			cs, err := cr.EndClockSync(ctx)
			out = append(out, cs...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}
