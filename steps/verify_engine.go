package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
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

var verifyEngineKind = workflow.NewStepKind("verify_engine",
	"re-check the served identity (model, revision, engine version, context length, parallel configuration); a mismatch fails the run",
	func() *VerifyEngineConfig {
		return &VerifyEngineConfig{Check: []string{"model", "revision", "engine_version", "context_length", "parallel"}}
	},
	runVerifyEngine)

func runVerifyEngine(ctx context.Context, rc *workflow.RunContext, d *Deps, c *VerifyEngineConfig) error {
	id, err := d.Engine.Identity(ctx)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	want := d.Expect
	if want.Model == "" {
		want.Model = d.Model
	}
	var mism []string
	for _, k := range c.Check {
		switch k {
		case "model":
			if want.Model != "" && !engines.SameModel(want.Model, id.Model) {
				mism = append(mism, fmt.Sprintf("model: requested %q, served %q", want.Model, id.Model))
			}
		case "revision":
			if want.Revision != "" && id.Revision != want.Revision {
				mism = append(mism, fmt.Sprintf("revision: requested %q, served %q", want.Revision, id.Revision))
			}
		case "engine_version":
			if want.EngineVersion != "" && id.EngineVersion != want.EngineVersion {
				mism = append(mism, fmt.Sprintf("engine version: requested %q, running %q", want.EngineVersion, id.EngineVersion))
			}
		case "context_length":
			if want.ContextLength > 0 && id.ContextLength != want.ContextLength {
				mism = append(mism, fmt.Sprintf("context length: requested %d, served %d", want.ContextLength, id.ContextLength))
			}
		case "parallel":
			if want.TensorParallel > 0 && id.TensorParallel != want.TensorParallel {
				mism = append(mism, fmt.Sprintf("tensor parallel: requested %d, running %d", want.TensorParallel, id.TensorParallel))
			}
		}
	}
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.Engine.ServedModel = id.Model
		if id.Revision != "" {
			m.Engine.Revision = id.Revision
		}
		if id.EngineVersion != "" {
			m.Engine.Version = id.EngineVersion
		}
		if id.ContextLength > 0 {
			m.Engine.ContextLength = id.ContextLength
		}
		if id.TensorParallel > 0 {
			m.Engine.TensorParallel = id.TensorParallel
		}
	}); err != nil {
		return err
	}
	if len(mism) > 0 {
		return fmt.Errorf("identity check failed before any formal request: %s", strings.Join(mism, "; "))
	}
	return nil
}
