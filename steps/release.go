package steps

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/workflow"
)

// ReleaseConfig is the `with:` of a release step (spec step 6).
type ReleaseConfig struct {
	Tolerance float64           `yaml:"tolerance"`
	Hold      workflow.Duration `yaml:"hold"`
	MaxWait   workflow.Duration `yaml:"max_wait"`
	// Grace is how long the engine gets after SIGTERM before SIGKILL.
	Grace workflow.Duration `yaml:"grace"`
	// MemToleranceMB is how far above its pre-test level GPU memory may stay
	// and still count as released.
	MemToleranceMB int `yaml:"mem_tolerance_mb"`
	// WaitBaseline keeps sampling until power is back at baseline (the
	// benchmark-1.5 release stage); false only stops the engine and waits
	// for it to exit.
	WaitBaseline bool `yaml:"wait_baseline"`
}

// Validate checks the numbers.
func (c *ReleaseConfig) Validate() error {
	if c.Tolerance <= 0 || c.Tolerance >= 1 {
		return fmt.Errorf("tolerance must be a fraction in (0, 1), got %v", c.Tolerance)
	}
	if c.MaxWait.D() < c.Hold.D() {
		return fmt.Errorf("max_wait (%s) must be at least hold (%s)", c.MaxWait, c.Hold)
	}
	if c.MemToleranceMB < 0 {
		return fmt.Errorf("mem_tolerance_mb must not be negative")
	}
	return nil
}

var releaseKind = workflow.NewStepKind("release",
	"stop the engine and sample until power is back within tolerance of baseline for hold, memory is released and the process exited, or max_wait passes (stage release)",
	func() *ReleaseConfig {
		return &ReleaseConfig{Tolerance: 0.05, Hold: workflow.Duration(30 * time.Second), MaxWait: workflow.Duration(10 * time.Minute), Grace: workflow.Duration(30 * time.Second), MemToleranceMB: 64, WaitBaseline: true}
	},
	runRelease)

func runRelease(ctx context.Context, rc *workflow.RunContext, d *Deps, c *ReleaseConfig) error {
	if d.External && d.Observe == nil {
		// Not ours to stop: no release stage.
		return d.sampleNow(ctx)
	}
	meta := rc.Out.Meta()
	from := rc.Clock.Now()
	if st, ok := meta.StageByName("formal"); ok {
		from = st.End
	}
	rc.StageStart("release", from)
	d.report("release", loadgen.Progress{}, 0)
	if d.External {
		// joulebench measure: the load it did not send has ended; the
		// server keeps running, and the release waits for power and
		// memory back at baseline.
		if !c.WaitBaseline || d.measuresNothing() != "" {
			if err := d.sampleNow(ctx); err != nil {
				return err
			}
			return rc.StageEnd("release", rc.Clock.Now())
		}
		return d.waitBaseline(ctx, rc, meta, from, 0, c)
	}
	exitAt, err := d.StopEngine(ctx, rc, c.Grace.D())
	if err != nil {
		return fmt.Errorf("stop engine: %w", err)
	}
	if d.StopMetrics != nil {
		// The engine is gone: nothing left to scrape on the side path.
		if err := d.StopMetrics(); err != nil {
			return fmt.Errorf("engine metrics: %w", err)
		}
	}
	if !c.WaitBaseline || d.measuresNothing() != "" {
		if err := d.sampleNow(ctx); err != nil {
			return err
		}
		end := rc.Clock.Now()
		if exitAt > end {
			end = exitAt
		}
		return rc.StageEnd("release", end)
	}
	return d.waitBaseline(ctx, rc, meta, from, exitAt, c)
}

// waitBaseline samples until the release closes (power and memory back
// at baseline, the engine exited unless it keeps running) or max_wait
// passes, and ends the release stage at the last sample.
func (d *Deps) waitBaseline(ctx context.Context, rc *workflow.RunContext, meta record.Meta, from, exitAt float64, c *ReleaseConfig) error {
	bs, ok := meta.StageByName("baseline")
	if !ok {
		return fmt.Errorf("release wait needs a baseline stage (add a baseline step or set wait_baseline: false)")
	}
	deadline := from + c.MaxWait.Seconds()
	tick := d.sampler().Interval()
	for {
		if err := d.wait(ctx, tick); err != nil {
			return err
		}
		now := rc.Clock.Now()
		closed, err := d.releaseClosed(bs, from, now, exitAt, c)
		if err != nil {
			return err
		}
		if closed || now >= deadline {
			if !closed {
				rc.Log.Warn().Msgf("release did not close within max_wait %s", c.MaxWait)
			}
			// The stage ends at the last sample, so every formula over it
			// has data to its end.
			if err := d.sampleNow(ctx); err != nil {
				return err
			}
			return rc.StageEnd("release", d.lastSampleT(now))
		}
	}
}

// releaseClosed runs the release-complete detection of measure over the
// samples so far — the same code analyze uses on the archive.
func (d *Deps) releaseClosed(bs record.Stage, from, now, exitAt float64, c *ReleaseConfig) (bool, error) {
	d.run.mu.Lock()
	samples := append([]record.PowerSample(nil), d.run.samples...)
	d.run.mu.Unlock()
	pd, err := measure.NewPowerData(samples)
	if err != nil {
		return false, err
	}
	pw := map[string]float64{}
	mem := map[string]int64{}
	devs := pd.Devices()
	sort.Strings(devs)
	for _, dev := range devs {
		w, err := pd.MeanPower(dev, bs.Start, bs.End)
		if err != nil {
			return false, fmt.Errorf("baseline of %s: %w", dev, err)
		}
		pw[dev] = w
		if m, ok := pd.MaxMem(dev, bs.Start, bs.End); ok {
			mem[dev] = m
		}
	}
	r, err := pd.Release(measure.ReleaseParams{From: from, End: now, Baseline: pw, MemBaseline: mem,
		MemToleranceBytes: int64(c.MemToleranceMB) << 20, Tolerance: c.Tolerance, HoldS: c.Hold.Seconds(), ExitedAt: exitAt,
		ServerKeepsRunning: d.External && d.Observe != nil})
	if err != nil {
		return false, err
	}
	return r.Closed, nil
}

// lastSampleT is the time of the newest sample common to every device
// (the earliest of each device's latest sample), or def without samples.
func (d *Deps) lastSampleT(def float64) float64 {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	latest := map[string]float64{}
	for _, s := range d.run.samples {
		if s.T > latest[s.Device] {
			latest[s.Device] = s.T
		}
	}
	t := def
	first := true
	for _, v := range latest {
		if first || v < t {
			t, first = v, false
		}
	}
	return t
}
