package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/loadgen"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// engineEnv is what building an engine needs from the run.
type engineEnv struct {
	RunID     string
	RunDir    string
	EngineLog io.Writer
	Clock     *workflow.Clock
	Quick     bool
	// Note logs how a slow readiness wait of --engine-url goes (nil: not).
	Note func(string)
	// ReadyTimeout bounds the wait for an --engine-url server to list its
	// model when --model is not given (0: defaultReadyTimeout).
	ReadyTimeout time.Duration
	// GPU is the simulated GPUs' settings (nil: their defaults).
	GPU *simtel.GPUSettings
}

// defaultReadyTimeout is start_engine's default ready_timeout.
const defaultReadyTimeout = 20 * time.Minute

// EngineSetup is the engine of a run and how to talk to it.
type EngineSetup struct {
	Kind      string
	Engine    engines.Engine
	Simulated bool
	// SimLoad and SimTelemetry are set for the simulator, whose GPUs
	// follow its load.
	SimLoad      simtel.Load
	SimTelemetry simtel.Config
	// SimNodes are set instead for a simulated deployment of several
	// nodes (--sim-preset disaggregated): each node's GPUs follow its part.
	SimNodes  []simtel.Node
	NewClient func(baseURL string) loadgen.Doer
	Model     string
	Expect    engines.Identity
	Chat      bool
	// External is true for an already running server (--engine-url):
	// joulebench neither starts nor stops it, so the run has no startup
	// or release stage (those metrics are not applicable).
	External bool
	// Spec is the frozen engine configuration.
	Spec all.Spec
	// StartMetrics starts the engine /metrics side path; the samples go to
	// sink (engine_metrics.jsonl) and warnings to warn. It returns the
	// function that stops it (and returns a write error). interval and
	// families override the options when set (profile parameters). For an
	// engine without /metrics it does nothing.
	StartMetrics func(ctx context.Context, interval time.Duration, families []string,
		sink func([]record.EngineMetric) error, warn func(string)) (stop func() error)
	// ExitError says why the engine exited on its own (exit status and the
	// tail of engine.log); nil when it did not or cannot say.
	ExitError func() error
}

// simulatedKind reports whether kind is a simulated engine.
func (r *Runner) simulatedKind(kind string) bool {
	d, ok := r.s.Registry.Lookup(kind)
	return ok && (d.Simulated || d.SimulatedBy != nil && r.s.Engine.URL == "" && d.SimulatedBy(r.s.Engine.Settings))
}

// engineKind is the kind of engine the spec asks for: the default
// (simulated) one, a managed kind, or for --engine-url the server's kind
// (the generic kind of its API when unknown).
func (r *Runner) engineKind() string {
	s := r.s
	if r.deployment != nil {
		return r.deployment.kind()
	}
	kind := r.engine
	if kind == "" {
		kind = all.Default
		if len(s.Engines) > 0 {
			kind = s.Engines[0]
		}
	}
	if s.Engine.URL != "" && (kind == "" || kind == all.Default && !s.EngineGiven) {
		d, err := s.Registry.ForRemote("", s.Engine.API)
		if err != nil {
			d, err = s.Registry.ForRemote("", "")
		}
		if err == nil {
			return d.Kind
		}
	}
	return kind
}

// setupEngine builds the engine the spec asks for, through its
// descriptor (all.New): a managed engine, an already running server
// (--engine-url) or the simulator, whose GPUs follow its load.
func (r *Runner) setupEngine(env engineEnv) (*EngineSetup, error) {
	if r.deployment != nil {
		return r.setupDeployment(env)
	}
	kind := r.engineKind()
	if r.simulatedKind(kind) && r.s.Engine.URL != "" {
		return nil, Invalidf("--engine %s cannot be combined with --engine-url", kind)
	}
	spec, err := r.engineSpec(kind, env)
	if err != nil {
		return nil, err
	}
	eng, err := all.New(spec)
	if err != nil {
		return nil, Invalidf("%v", err)
	}
	wait := env.ReadyTimeout
	if wait <= 0 {
		wait = defaultReadyTimeout
	}
	// A loading server is waited for, as by start_engine; one that is not
	// there fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	spec.Model, err = all.ResolveModel(ctx, spec, eng)
	cancel()
	if err != nil {
		return nil, WithCode(CodeFailure, err)
	}
	clock := env.Clock
	es := &EngineSetup{
		Kind:      eng.Kind(),
		Engine:    eng,
		Simulated: eng.Simulated(),
		NewClient: all.NewClient(spec, eng, clock.Now),
		Model:     all.Model(spec, eng),
		Expect:    all.Expect(spec, eng),
		Chat:      true,
		External:  all.IsExternal(eng),
		Spec:      spec,
		ExitError: func() error { return all.ExitError(eng) },
	}
	if nodes, ok := eng.(simulatedNodes); ok {
		if env.GPU != nil {
			nodes.SetGPUSettings(env.GPU)
		}
		es.SimNodes = nodes.SimulatedNodes()
	}
	if gpu, ok := eng.(simulatedGPU); ok {
		if env.GPU != nil {
			// The run's power limit and clocks: the engine's steps
			// slow and its GPUs' power follows them.
			gpu.SetGPUSettings(env.GPU)
		}
		es.SimLoad, es.SimTelemetry = gpu, gpu.GPUConfig()
	}
	es.StartMetrics = startMetrics(spec, eng, clock)
	return es, nil
}

// simulatedGPU is an engine whose GPUs are simulated too (the
// simulator): they draw power following its load, with the model it
// gives.
type simulatedGPU interface {
	simtel.Load
	GPUConfig() simtel.Config
	SetGPUSettings(*simtel.GPUSettings)
}

// simulatedNodes is a simulated deployment of several nodes, each with
// its own GPUs and power clock.
type simulatedNodes interface {
	SimulatedNodes() []simtel.Node
	SetGPUSettings(*simtel.GPUSettings)
}

// startMetrics is an EngineSetup's StartMetrics for eng.
func startMetrics(spec all.Spec, eng engines.Engine, clock *workflow.Clock) func(ctx context.Context, interval time.Duration, families []string,
	sink func([]record.EngineMetric) error, warn func(string)) func() error {
	return func(ctx context.Context, interval time.Duration, families []string,
		sink func([]record.EngineMetric) error, warn func(string)) func() error {
		sc := all.StartMetrics(ctx, spec, eng, all.MetricsConfig{Interval: interval, Families: families, Clock: clock.Now, Sink: sink, Warn: warn})
		if sc == nil {
			return func() error { return nil }
		}
		return sc.Stop
	}
}

// engineSpec reads the engine options into an all.Spec. The simulator
// reads none of the options only real engines read (managedOnlyFlags,
// simIgnoredFlags): with several engines, those values are the others'.
func (r *Runner) engineSpec(kind string, env engineEnv) (all.Spec, error) {
	o := r.s.Engine
	envs, err := parseEngineEnv(o.EnvVars)
	if err != nil {
		return all.Spec{}, err
	}
	bin, err := r.binFor(kind)
	if err != nil {
		return all.Spec{}, err
	}
	simulated := r.simulatedKind(kind)
	if bin != "" && o.URL == "" && !simulated {
		if err := checkExecutable(bin); err != nil {
			return all.Spec{}, Invalidf("--engine-bin for %s: %v", kind, err)
		}
	}
	spec := all.Spec{
		Kind:           kind,
		Engines:        r.s.Registry,
		URL:            o.URL,
		API:            o.API,
		Common:         o.Common,
		Settings:       o.Settings,
		EngineVersion:  o.EngineVersion,
		Precision:      o.Precision,
		Thinking:       o.Thinking,
		ScrapeInterval: o.ScrapeInterval,
		MetricFamilies: o.MetricFamilies,
		RunDir:         env.RunDir,
		RunID:          env.RunID,
		APIKey:         o.APIKey,
		Note:           env.Note,
		Quick:          env.Quick,
		PidDir:         all.PidDir(),
	}
	spec.Bin, spec.Env, spec.Model, spec.Log = bin, envs, r.modelFor(kind), env.EngineLog
	if simulated {
		spec.API, spec.Bin, spec.Args, spec.Env, spec.Port = "", "", nil, nil, 0
		spec.EngineVersion, spec.Precision, spec.Thinking, spec.APIKey = "", "", "", ""
	}
	if d, ok := r.s.Registry.Lookup(kind); ok && spec.URL != "" && d.Generic && spec.API == "" {
		spec.API = d.API
	}
	if err := spec.Validate(); err != nil {
		return all.Spec{}, Invalidf("%v", err)
	}
	return spec, nil
}

// checkExecutable checks, before any engine starts, that bin is an
// executable file: a path (it holds a separator) that exists, is not a
// directory and has an execute bit, or a name found in PATH.
func checkExecutable(bin string) error {
	if !strings.ContainsRune(bin, filepath.Separator) && !strings.ContainsRune(bin, '/') {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%q is not an executable found in PATH", bin)
		}
		return nil
	}
	st, err := os.Stat(bin)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", bin)
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%s is a directory, not an executable", bin)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable (mode %s; chmod +x it)", bin, st.Mode().Perm())
	}
	return nil
}

// parseEngineEnv reads KEY=VALUE overrides.
func parseEngineEnv(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, Invalidf("--engine-env %q: want KEY=VALUE", kv)
		}
		out[k] = val
	}
	return out, nil
}
