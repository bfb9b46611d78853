package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/loadgen"
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

var startEngineKind = workflow.NewStepKind("start_engine",
	"launch the engine from its frozen configuration and wait until it is ready (stage startup begins)",
	func() *StartEngineConfig {
		return &StartEngineConfig{ReadyTimeout: workflow.Duration(20 * time.Minute)}
	},
	runStartEngine)

func runStartEngine(ctx context.Context, rc *workflow.RunContext, d *Deps, c *StartEngineConfig) error {
	if d.Engine == nil {
		return fmt.Errorf("no engine")
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	if !d.External {
		t := rc.Clock.Now()
		rc.StageStart("startup", t)
		if err := rc.Event("engine_started", t); err != nil {
			return err
		}
	}
	d.report("startup", loadgen.Progress{}, 0)
	if err := d.Engine.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", d.Engine.Kind(), err)
	}
	if err := d.Engine.WaitReady(ctx, c.ReadyTimeout.D()); err != nil {
		return fmt.Errorf("%s not ready: %w", d.Engine.Kind(), err)
	}
	if err := rc.Event("engine_ready", rc.Clock.Now()); err != nil {
		return err
	}
	if d.Client == nil && d.NewClient != nil {
		d.Client = d.NewClient(d.Engine.BaseURL())
	}
	info := d.Engine.Info()
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		// What the run recorded before the engine could say it (the
		// image digest the user gave) stays beside what it says now.
		for k, v := range m.Engine.Extra {
			if _, ok := info.Extra[k]; !ok {
				if info.Extra == nil {
					info.Extra = map[string]any{}
				}
				info.Extra[k] = v
			}
		}
		m.Engine = info
		if dp, ok := d.Engine.(engines.Deployer); ok {
			m.Deployment = dp.Record() // with every part's URL
		}
	}); err != nil {
		return err
	}
	return devicesHeld(rc)
}

// RequiresLater makes a profile that starts an engine without a release
// step a load error: nothing else stops the engine at the end of a run.
func (c *StartEngineConfig) RequiresLater() ([]string, string) {
	return []string{"release"}, "the release step stops the engine the run started"
}
