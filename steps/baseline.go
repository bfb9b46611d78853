package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// BaselineConfig is the `with:` of a baseline step: idle power before the
// engine starts.
type BaselineConfig struct {
	Duration workflow.Duration `yaml:"duration"`
}

// Validate checks the duration.
func (c *BaselineConfig) Validate() error {
	if c.Duration.D() <= 0 {
		return fmt.Errorf("duration must be positive")
	}
	return nil
}

var baselineKind = workflow.NewStepKind("baseline",
	"collect idle power for the given duration (stage baseline)",
	func() *BaselineConfig { return &BaselineConfig{Duration: workflow.Duration(20 * time.Second)} },
	runBaseline)

func runBaseline(ctx context.Context, rc *workflow.RunContext, d *Deps, c *BaselineConfig) error {
	if why := d.measuresNothing(); why != "" {
		// Waiting would only make the run longer: no stage is recorded,
		// and the formulas over the baseline say it is missing.
		rc.Log.Warn().Str("stage", "baseline").Msgf("baseline skipped: %s", why)
		return nil
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	start := rc.Clock.Now()
	rc.StageStart("baseline", start)
	d.report("baseline", loadgen.Progress{}, 0)
	if err := d.wait(ctx, c.Duration.D()); err != nil {
		return err
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	return rc.StageEnd("baseline", rc.Clock.Now())
}

// measuresNothing says why a stage that only samples power would measure
// nothing ("" when it measures): no power is sampled (no power source, or
// no monitor step before it), or the power source has no device.
func (d *Deps) measuresNothing() string {
	d.run.mu.Lock()
	sampling := d.run.sampler != nil && !d.run.stopped
	samples := len(d.run.samples)
	d.run.mu.Unlock()
	switch {
	case d.Source == nil:
		return "no power source"
	case !sampling:
		return "power is not sampled (no monitor step before it)"
	case samples == 0:
		// The monitor step takes a first sample before it returns.
		return fmt.Sprintf("power source %s has no device", d.Source.Name())
	}
	return ""
}
