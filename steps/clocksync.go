package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// clockSyncWait bounds the measurement of the end offsets.
const clockSyncWait = 30 * time.Second

// RecordClockSync measures, once sampling has stopped, the end offset of
// each clock the power source reads that is not the run clock (an agent
// on another node), writes every clock's start and end offsets into
// run.json's telemetry.clock_sync, and places that clock's samples again
// in power.csv with the offset interpolated between the start and the end
// (a source that can: telemetry.RePlacer). A source on the run clock
// alone does nothing. An end that could not be measured is an error: the
// entry is written without it, its samples keep the start offset, and a
// run that ends with it is not complete (the samples' placement could not
// be checked).
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
	if rerr := d.rePlaceSamples(rc, cs); rerr != nil {
		return errors.Join(rerr, err)
	}
	if err != nil {
		return fmt.Errorf("power source clock offset at the end: %w", err)
	}
	return nil
}

// rePlaceSamples places the samples streamed with the start offsets again
// once the end offsets are known, in power.csv and in the run's own copy,
// when the source can (telemetry.RePlacer) and an end is known (cs). A stage boundary the samples
// covered before and no longer do is moved to their edge (keepCovered). A
// failure to rewrite power.csv leaves it as it was and is the run's error.
func (d *Deps) rePlaceSamples(rc *workflow.RunContext, cs []record.ClockSync) error {
	rp, ok := d.Source.(telemetry.RePlacer)
	if !ok || !slices.ContainsFunc(cs, func(c record.ClockSync) bool { return c.EndOffsetS != nil }) {
		return nil // no clock of the source has its end: nothing moves
	}
	if err := rc.Out.RePlacePower(rp.RePlace); err != nil {
		return archiveErr(rc, fmt.Errorf("place the samples with the clock offsets interpolated between start and end: %w", err))
	}
	d.run.mu.Lock()
	lo0, hi0, ok0 := commonCoverage(d.run.samples)
	for i := range d.run.samples {
		if t, ok := rp.RePlace(d.run.samples[i].Device, d.run.samples[i].T); ok {
			d.run.samples[i].T = t
		}
	}
	lo1, hi1, ok1 := commonCoverage(d.run.samples)
	d.run.mu.Unlock()
	if !ok0 || !ok1 || (lo0 == lo1 && hi0 == hi1) {
		return nil
	}
	return archiveErr(rc, rc.Out.UpdateMeta(func(m *record.Meta) { keepCovered(m.Stages, lo0, hi0, lo1, hi1) }))
}

// keepCovered moves each ended stage's boundary that lay within the
// samples' common coverage [lo0, hi0] to within the new one [lo1, hi1]
// (by at most the drift): a stage that ended at the last sample (release,
// a run that stopped early) still ends at it, and every formula over it
// still has data to its end.
func keepCovered(stages []record.Stage, lo0, hi0, lo1, hi1 float64) {
	clamp := func(x float64) float64 {
		if x < lo0 || x > hi0 {
			return x
		}
		return min(max(x, lo1), hi1)
	}
	for i := range stages {
		if !stages[i].Open {
			stages[i].Start, stages[i].End = clamp(stages[i].Start), clamp(stages[i].End)
		}
	}
}

// commonCoverage is the span every device's samples cover: from the
// latest first sample to the earliest last one; false without samples.
func commonCoverage(samples []record.PowerSample) (lo, hi float64, ok bool) {
	first, last := map[string]float64{}, map[string]float64{}
	for _, s := range samples {
		if f, seen := first[s.Device]; !seen || s.T < f {
			first[s.Device] = s.T
		}
		if l, seen := last[s.Device]; !seen || s.T > l {
			last[s.Device] = s.T
		}
	}
	for dev, f := range first {
		if !ok {
			lo, hi, ok = f, last[dev], true
			continue
		}
		lo, hi = max(lo, f), min(hi, last[dev])
	}
	return lo, hi, ok
}
