package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// clockSyncWait bounds the measurement of the end offsets.
const clockSyncWait = 30 * time.Second

// RecordClockSync measures, once sampling has stopped, the end offset of
// each clock the power source reads that is not the run clock (an agent
// on another node), and writes every clock's start and end offsets into
// run.json's telemetry.clock_sync. A source on the run clock alone does
// nothing. An end that could not be measured is an error: the entry is
// written without it, and a run that ends with it is not complete (the
// samples' placement could not be checked).
func (d *Deps) RecordClockSync(ctx context.Context, rc *workflow.RunContext) error {
	cr, ok := d.Source.(telemetry.ClockSyncReporter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clockSyncWait)
	defer cancel()
	cs, err := cr.ClockSync(ctx, true)
	if len(cs) > 0 {
		if uerr := rc.Out.UpdateMeta(func(m *record.Meta) { m.Telemetry.ClockSync = cs }); uerr != nil {
			return archiveErr(rc, uerr)
		}
	}
	if err != nil {
		return fmt.Errorf("power source clock offset at the end: %w", err)
	}
	return nil
}
