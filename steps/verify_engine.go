package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/workflow"
)

// VerifyEngineConfig is the `with:` of a verify_engine step: which identity
// fields must match what was requested (spec step 3).
type VerifyEngineConfig struct {
	Check []string `yaml:"check"`
}

var identityChecks = map[string]bool{"model": true, "revision": true, "engine_version": true, "context_length": true, "parallel": true, "precision": true}

// Validate rejects unknown identity fields.
func (c *VerifyEngineConfig) Validate() error {
	for _, k := range c.Check {
		if !identityChecks[k] {
			return fmt.Errorf("unknown identity check %q (valid: context_length, engine_version, model, parallel, precision, revision)", k)
		}
	}
	return nil
}

var verifyEngineKind = workflow.NewStepKind("verify_engine",
	"re-check the served identity (model, revision, engine version, context length, parallel configuration, precision); a mismatch fails the run",
	func() *VerifyEngineConfig {
		return &VerifyEngineConfig{Check: []string{"model", "revision", "engine_version", "context_length", "parallel", "precision"}}
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
		case "precision":
			if m := precisionMismatch(want.Precision, id.Precision); m != "" {
				mism = append(mism, m)
			}
		}
	}
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		if dp, ok := d.Engine.(engines.Deployer); ok {
			m.Deployment = dp.Record() // with each part's identity
		}
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
		// What is served, else (the engine does not say) what was asked.
		want.Precision.Record(&m.Engine)
		id.Precision.Record(&m.Engine)
	}); err != nil {
		return err
	}
	held := devicesHeld(rc)
	if len(mism) > 0 {
		return errors.Join(fmt.Errorf("identity check failed before any formal request: %s", strings.Join(mism, "; ")), held)
	}
	return held
}

// precisionMismatch says how the served precision differs from the one
// asked for ("" when they agree, or either is not known): each with where
// it was read, e.g. `precision: requested "fp8" (--precision), served
// "bf16" (config.json)`.
func precisionMismatch(want, got engines.Precision) string {
	w, g := want.Label(), got.Label()
	if w == "" || g == "" || engines.SamePrecision(w, g) {
		return ""
	}
	return fmt.Sprintf("precision: requested %q%s, served %q%s", w, from(want.From), g, from(got.From))
}

func from(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
