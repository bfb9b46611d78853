package steps

import (
	"fmt"
	"time"

	"github.com/joulebench/joulebench/workflow"
)

// StartEngineConfig is the `with:` of a start_engine step.
type StartEngineConfig struct {
	// ReadyTimeout bounds the wait for the engine's health endpoint.
	ReadyTimeout workflow.Duration `yaml:"ready_timeout"`
}

// Validate checks the timeout.
func (c *StartEngineConfig) Validate() error {
	if c.ReadyTimeout.D() <= 0 {
		return fmt.Errorf("ready_timeout must be positive")
	}
	return nil
}

var startEngineKind = workflow.StepKind{
	Name:      "start_engine",
	Doc:       "launch the engine from its frozen configuration and wait until it is ready (stage startup begins)",
	NewConfig: func() any { return &StartEngineConfig{ReadyTimeout: workflow.Duration(20 * time.Minute)} },
}
