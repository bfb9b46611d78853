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
