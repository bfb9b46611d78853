package steps

import (
	"fmt"

	"github.com/joulebench/joulebench/workflow"
)

// VerifyEngineConfig is the `with:` of a verify_engine step: which identity
// fields must match what was requested (spec step 3).
type VerifyEngineConfig struct {
	Check []string `yaml:"check"`
}

var identityChecks = map[string]bool{"model": true, "revision": true, "engine_version": true, "context_length": true, "parallel": true}

// Validate rejects unknown identity fields.
func (c *VerifyEngineConfig) Validate() error {
	for _, k := range c.Check {
		if !identityChecks[k] {
			return fmt.Errorf("unknown identity check %q (valid: context_length, engine_version, model, parallel, revision)", k)
		}
	}
	return nil
}

var verifyEngineKind = workflow.StepKind{
	Name: "verify_engine",
	Doc:  "re-check the served identity (model, revision, engine version, context length, parallel configuration); a mismatch fails the run",
	NewConfig: func() any {
		return &VerifyEngineConfig{Check: []string{"model", "revision", "engine_version", "context_length", "parallel"}}
	},
}
