package steps

import (
	"fmt"
	"time"

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

var releaseKind = workflow.StepKind{
	Name: "release",
	Doc:  "stop the engine and sample until power is back within tolerance of baseline for hold, memory is released and the process exited, or max_wait passes (stage release)",
	NewConfig: func() any {
		return &ReleaseConfig{Tolerance: 0.05, Hold: workflow.Duration(30 * time.Second), MaxWait: workflow.Duration(10 * time.Minute), Grace: workflow.Duration(30 * time.Second), MemToleranceMB: 64, WaitBaseline: true}
	},
}
