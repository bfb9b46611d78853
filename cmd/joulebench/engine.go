package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/openai"
	simengine "github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/loadgen"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// engineFlags registers the flags that choose and configure the engine.
func engineFlags(f *pflag.FlagSet) {
	f.String("engine", "sim", "engine: sim")
	f.String("model", "", "model id to request (default: the engine's)")
	f.Int64("seed", 1, "seed of the engine (sampling) and of the simulator")
	f.String("sim-preset", "", "simulator behaviour for tests: drift (J/token never settles), no-release (power never returns to baseline)")
}

// engineEnv is what building an engine needs from the run.
type engineEnv struct {
	RunDir    string
	EngineLog io.Writer
	Clock     *workflow.Clock
	Quick     bool
}

// engineSetup is the engine of a run and how to talk to it.
type engineSetup struct {
	Kind      string
	Engine    engines.Engine
	Simulated bool
	// SimLoad and SimTelemetry are set for the simulator, whose GPUs
	// follow its load.
	SimLoad      simtel.Load
	SimTelemetry simtel.Config
	NewClient    func(baseURL string) loadgen.Doer
	Model        string
	Expect       engines.Identity
	Chat         bool
}

// setupEngine builds the engine the flags ask for.
func (a *app) setupEngine(env engineEnv) (*engineSetup, error) {
	kind := a.v.GetString("engine")
	if kind != "sim" {
		return nil, invalidf("--engine %q: this build runs the built-in simulator (sim); real engines are not wired yet", kind)
	}
	seed := a.v.GetInt64("seed")
	simCfg := simengine.DefaultConfig()
	simCfg.Seed = seed
	if env.Quick {
		simCfg = simengine.Quick(simCfg)
	}
	telCfg := simtel.DefaultConfig()
	if env.Quick {
		telCfg.RiseTauS /= simengine.QuickSpeed
		telCfg.DecayTauS /= simengine.QuickSpeed
	}
	telCfg.Seed = seed
	switch p := a.v.GetString("sim-preset"); p {
	case "":
	case "drift":
		simCfg.DriftPerRequest = 0.01
	case "no-release":
		telCfg.ReleaseOffsetW = telCfg.IdleW * 0.5
	default:
		return nil, invalidf("--sim-preset %q: valid presets are drift and no-release", p)
	}
	if m := a.v.GetString("model"); m != "" {
		simCfg.Model = m
	}
	simCfg.Log = env.EngineLog
	eng := simengine.New(simCfg)
	clock := env.Clock
	model := eng.Config().Model // the simulator serves an id that contains "sim"
	return &engineSetup{
		Kind:         "sim",
		Engine:       eng,
		Simulated:    true,
		SimLoad:      eng,
		SimTelemetry: telCfg,
		NewClient: func(url string) loadgen.Doer {
			return openai.NewClient(url, openai.WithClock(clock.Now), openai.WithRecordTokenTimes(true))
		},
		Model:  model,
		Expect: engines.Identity{Model: model},
		Chat:   true,
	}, nil
}
