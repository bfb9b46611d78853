package steps

import (
	"fmt"
	"time"

	"github.com/joulebench/joulebench/workflow"
)

// MonitorConfig is the `with:` of a monitor step: start sampling GPU power
// (spec step 2, lifecycle monitoring). Sampling goes on until the archive
// step.
type MonitorConfig struct {
	Interval workflow.Duration `yaml:"interval"`
}

// Validate checks the interval.
func (c *MonitorConfig) Validate() error {
	if c.Interval.D() < 10*time.Millisecond {
		return fmt.Errorf("interval must be at least 10ms, got %s", c.Interval)
	}
	return nil
}

var monitorKind = workflow.StepKind{
	Name:      "monitor",
	Doc:       "start the power sampler (one goroutine per source) at the given interval; it runs until the archive step",
	NewConfig: func() any { return &MonitorConfig{Interval: workflow.Duration(time.Second)} },
}
