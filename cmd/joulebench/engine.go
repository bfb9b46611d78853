package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/launch"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/engines/process"
	simengine "github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/loadgen"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// engineFlags registers the flags that choose and configure the engine.
func (a *app) engineFlags(f *pflag.FlagSet) {
	f.StringSlice("engine", []string{all.Default}, "engine: "+a.engineHelp()+". Repeat it (--engine ollama --engine llamacpp) to run the profile against each engine in turn and compare them")
	f.StringArray("model", nil, "model id: vLLM/SGLang model path or Hugging Face id (also the served name); llama.cpp alias (default: the GGUF file name); Ollama model name; with --engine-url the model to request (default: the first listed). With several engines, KIND=ID gives one engine its own (--model ollama=tiny --model llamacpp=tiny); a plain ID serves every engine without its own")
	f.Int64("seed", 1, "seed of the engine (sampling) and of the simulator")
	f.String("sim-preset", "", "simulator behaviour for tests: drift (J/token never settles), no-release (power never returns to baseline), small-batch (16 slots and a small KV cache: the frontier's knee at low load), prefix-cache (a prefix cache: cached prompt tokens skip prefill)")
	f.String("api-key", "", "API key sent as a Bearer token to the engine (or JOULEBENCH_API_KEY); never logged nor archived")
	f.String("engine-url", "", "benchmark an already running server at this URL instead of starting one (no startup or release stage)")
	f.String("engine-api", "", "API of --engine-url: openai or ollama (default: from --engine)")
	f.String("engine-bin", "", "engine executable (default: vllm, python, llama-server, ollama)")
	f.String("image-digest", "", "the engine's container image digest (sha256:…), recorded in run.json as the weights' and engine's provenance")
	f.StringArray("engine-arg", nil, "extra engine command-line argument (repeatable, one argument each)")
	f.StringArray("engine-env", nil, "engine environment override KEY=VALUE (repeatable)")
	f.String("model-file", "", "GGUF model file (llama.cpp; Ollama creates --model from it when missing)")
	f.Int("port", 0, "engine port on 127.0.0.1 (0: a free one)")
	f.Int("tp", 1, "tensor-parallel size (vLLM, SGLang)")
	f.Int("max-model-len", 0, "longest request in tokens (vLLM --max-model-len, SGLang --context-length, llama.cpp context per slot, Ollama context); 0: the engine's default")
	f.Int("slots", 0, "requests served at once: llama.cpp -np (default 4), Ollama OLLAMA_NUM_PARALLEL")
	f.String("ollama-api", "native", "Ollama request API: native (/api/chat, NDJSON, eval_* timings) or openai (/v1)")
	f.String("revision", "", "model revision to serve and expect (checked where the engine reports it: SGLang; Ollama digest)")
	f.String("engine-version", "", "engine version the identity check expects (empty: not checked)")
	f.String("thinking", "", "reasoning models: on or off (Ollama think, else chat_template_kwargs.enable_thinking); empty: the model's default")
	f.Bool("health-generate", false, "SGLang: also wait for /health_generate (one generated token) before ready")
	f.Bool("ollama-pull", false, "Ollama: refused (a download inside startup would count in its energy): run ollama pull MODEL before the benchmark")
	f.Duration("scrape-interval", launch.DefaultScrapeInterval, "interval of the engine /metrics side path")
	f.StringArray("metrics-family", nil, "engine metric family to keep in engine_metrics.jsonl (repeatable; default per engine)")
}

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
}

// defaultReadyTimeout is start_engine's default ready_timeout.
const defaultReadyTimeout = 20 * time.Minute

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
	// External is true for an already running server (--engine-url):
	// joulebench neither starts nor stops it, so the run has no startup
	// or release stage (those metrics are not applicable).
	External bool
	// Spec is the frozen engine configuration (zero for the simulator).
	Spec launch.Spec
	// StartMetrics starts the engine /metrics side path; the samples go to
	// sink (engine_metrics.jsonl) and warnings to warn. It returns the
	// function that stops it (and returns a write error). interval and
	// families override the flags when set (profile parameters). For an
	// engine without /metrics it does nothing.
	StartMetrics func(ctx context.Context, interval time.Duration, families []string,
		sink func([]archive.EngineMetric) error, warn func(string)) (stop func() error)
	// ExitError says why the engine exited on its own (exit status and the
	// tail of engine.log); nil when it did not or cannot say.
	ExitError func() error
}

// engineHelp lists the registered engine kinds for the --engine help:
// the ones joulebench starts (the simulated first), then the ones only
// given with --engine-url.
func (a *app) engineHelp() string {
	var local, remote []string
	for _, k := range a.engines.Kinds() {
		d, _ := a.engines.Lookup(k)
		switch {
		case d.Simulated:
			local = append([]string{k + " (" + d.Doc + ")"}, local...)
		case d.Start != nil:
			local = append(local, k)
		case d.Attach != nil:
			remote = append(remote, k+" ("+d.Doc+")")
		}
	}
	help := strings.Join(local, ", ")
	if len(remote) > 0 {
		help += "; with --engine-url also " + strings.Join(remote, ", ")
	}
	return help
}

// simulatedKind reports whether kind is a simulated engine.
func (a *app) simulatedKind(kind string) bool {
	d, ok := a.engines.Lookup(kind)
	return ok && d.Simulated
}

// engineKind is the kind of engine the flags ask for: the default
// (simulated) one, a managed kind, or for --engine-url the server's kind
// (the generic kind of its API when unknown).
func (a *app) engineKind() string {
	kind := a.engine
	if kind == "" {
		kind = all.Default
		if ks := a.v.GetStringSlice("engine"); len(ks) > 0 {
			kind = ks[0]
		}
	}
	if a.v.GetString("engine-url") != "" && (kind == "" || kind == all.Default && !a.v.IsSet("engine")) {
		d, err := a.engines.ForRemote("", a.v.GetString("engine-api"))
		if err != nil {
			d, err = a.engines.ForRemote("", "")
		}
		if err == nil {
			return d.Kind
		}
	}
	return kind
}

// setupEngine builds the engine the flags ask for.
func (a *app) setupEngine(env engineEnv) (*engineSetup, error) {
	kind := a.engineKind()
	if a.simulatedKind(kind) {
		if a.v.GetString("engine-url") != "" {
			return nil, invalidf("--engine %s cannot be combined with --engine-url", kind)
		}
		return a.setupSim(env)
	}
	spec, err := a.engineSpec(kind, env)
	if err != nil {
		return nil, err
	}
	eng, err := launch.New(spec)
	if err != nil {
		return nil, invalidf("%v", err)
	}
	if x, ok := eng.(*external.Engine); ok && spec.Model == "" {
		wait := env.ReadyTimeout
		if wait <= 0 {
			wait = defaultReadyTimeout
		}
		// A loading server is waited for, as by start_engine; one that is
		// not there fails at once (external.ResolveModel).
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		m, err := x.ResolveModel(ctx)
		cancel()
		if err != nil {
			return nil, withCode(exitFailure, fmt.Errorf("--engine-url %s: %w", process.RedactURL(spec.URL), err))
		}
		x.SetModel(m)
		spec.Model = m
	}
	clock := env.Clock
	es := &engineSetup{
		Kind:      eng.Kind(),
		Engine:    eng,
		NewClient: launch.NewClient(spec, eng, clock.Now),
		Model:     launch.Model(spec, eng),
		Expect:    launch.Expect(spec, eng),
		Chat:      true,
		External:  launch.IsExternal(eng),
		Spec:      spec,
		ExitError: func() error { return launch.ExitError(eng) },
	}
	es.StartMetrics = func(ctx context.Context, interval time.Duration, families []string,
		sink func([]archive.EngineMetric) error, warn func(string)) func() error {
		sc := launch.StartMetrics(ctx, spec, eng, launch.MetricsConfig{Interval: interval, Families: families, Clock: clock.Now, Sink: sink, Warn: warn})
		if sc == nil {
			return func() error { return nil }
		}
		return sc.Stop
	}
	return es, nil
}

// engineSpec reads the engine flags into a launch.Spec.
func (a *app) engineSpec(kind string, env engineEnv) (launch.Spec, error) {
	v := a.v
	envs, err := parseEngineEnv(v.GetStringSlice("engine-env"))
	if err != nil {
		return launch.Spec{}, err
	}
	spec := launch.Spec{
		Kind:    kind,
		Engines: a.engines,
		URL:     v.GetString("engine-url"),
		API:     v.GetString("engine-api"),
		Common: engines.Common{
			Bin:         v.GetString("engine-bin"),
			Args:        v.GetStringSlice("engine-arg"),
			Env:         envs,
			Model:       a.modelFor(kind),
			ModelFile:   v.GetString("model-file"),
			Revision:    v.GetString("revision"),
			Port:        v.GetInt("port"),
			TP:          v.GetInt("tp"),
			MaxModelLen: v.GetInt("max-model-len"),
			Slots:       v.GetInt("slots"),
			Seed:        v.GetInt64("seed"),
			Log:         env.EngineLog,
		},
		Settings:       a.engines.Settings(v.GetString),
		EngineVersion:  v.GetString("engine-version"),
		Thinking:       v.GetString("thinking"),
		ScrapeInterval: v.GetDuration("scrape-interval"),
		MetricFamilies: v.GetStringSlice("metrics-family"),
		RunDir:         env.RunDir,
		RunID:          env.RunID,
		APIKey:         v.GetString("api-key"),
		Note:           env.Note,
		PidDir:         process.DefaultPidDir(),
	}
	if d, ok := a.engines.Lookup(kind); ok && spec.URL != "" && d.Generic && spec.API == "" {
		spec.API = d.API
	}
	if err := spec.Validate(); err != nil {
		return launch.Spec{}, invalidf("%v", err)
	}
	return spec, nil
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
			return nil, invalidf("--engine-env %q: want KEY=VALUE", kv)
		}
		out[k] = val
	}
	return out, nil
}

// setupSim builds the built-in simulated engine and GPU.
func (a *app) setupSim(env engineEnv) (*engineSetup, error) {
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
	case "small-batch":
		// The frontier's knee within a small request set.
		simCfg = simengine.SmallBatch(simCfg)
	case "prefix-cache":
		// Multi-turn and shared-prefix workloads: cached prompt tokens
		// skip prefill.
		simCfg = simengine.WithPrefixCache(simCfg)
	default:
		return nil, checkSimPreset(p)
	}
	if m := a.modelFor(a.engineKind()); m != "" {
		simCfg.Model = m
	}
	simCfg.Log = env.EngineLog
	eng := simengine.New(simCfg)
	clock := env.Clock
	model := eng.Config().Model // the simulator serves an id that contains "sim"
	return &engineSetup{
		Kind:         simengine.Kind,
		Engine:       eng,
		Simulated:    true,
		SimLoad:      eng,
		SimTelemetry: telCfg,
		NewClient: func(url string) loadgen.Doer {
			return openai.NewClient(url, openai.WithClock(clock.Now), openai.WithRecordTokenTimes(true), openai.WithRunID(env.RunID))
		},
		Model:  model,
		Expect: engines.Identity{Model: model},
		Chat:   true,
		StartMetrics: func(ctx context.Context, interval time.Duration, families []string,
			sink func([]archive.EngineMetric) error, warn func(string)) func() error {
			sc := launch.StartMetrics(ctx, launch.Spec{Kind: simengine.Kind, Engines: a.engines}, eng, launch.MetricsConfig{Interval: interval, Families: families, Clock: clock.Now, Sink: sink, Warn: warn})
			if sc == nil {
				return func() error { return nil }
			}
			return sc.Stop
		},
		ExitError: func() error { return nil },
	}, nil
}

// managedOnlyFlags are the flags every engine that joulebench starts reads,
// and no other: not the simulator, not a server given with --engine-url.
func managedOnlyFlags() []string { return []string{"engine-bin", "engine-arg", "engine-env", "port"} }

// remoteEngineFlags are the engine-specific flags that still apply to a
// server given with --engine-url (what is requested and expected of it).
func remoteEngineFlags() []string { return []string{"model", "revision", "ollama-api"} }

// simIgnoredFlags are the flags of real engines the simulator ignores.
func simIgnoredFlags() []string {
	return []string{"engine-api", "engine-version", "thinking", "api-key", "image-digest"}
}

// checkEngineFlags validates the engine flags before anything is created:
// the kind exists and can run as asked, every flag the user set
// (changed) applies to it (the descriptor's Flags for the engine-specific
// ones), and the engine's own checks pass.
func (a *app) checkEngineFlags(changed func(string) bool) error {
	_, err := a.inapplicableFlags(changed)
	return err
}

// inapplicableFlags checks the engine kind (and its URL mode) and returns
// the flags set on the command line that do not apply to it, with the
// error that names them (nil when none).
func (a *app) inapplicableFlags(changed func(string) bool) ([]string, error) {
	kind := a.engineKind()
	url := a.v.GetString("engine-url") != ""
	d, ok := a.engines.Lookup(kind)
	switch {
	case ok && d.Simulated && url:
		return nil, invalidf("--engine %s cannot be combined with --engine-url", kind)
	case ok && d.Simulated:
	case url:
		if _, err := a.engines.ForRemote(kind, a.v.GetString("engine-api")); err != nil {
			return nil, invalidf("%v", err)
		}
	default:
		if _, err := a.engines.ForStart(kind); err != nil {
			return nil, invalidf("%v", err)
		}
	}
	specific := map[string]bool{}
	for _, k := range a.engines.Kinds() {
		o, _ := a.engines.Lookup(k)
		for _, f := range o.Flags {
			specific[f] = true
		}
	}
	var bad []string
	applies := func(f string) bool {
		switch {
		case f == "model" && url:
			return true // the model to request of the server, whatever its kind
		case specific[f] && !d.Accepts(f):
			return false
		case specific[f] && url:
			return slices.Contains(remoteEngineFlags(), f)
		case slices.Contains(managedOnlyFlags(), f):
			return !url && !d.Simulated
		case slices.Contains(simIgnoredFlags(), f):
			return !d.Simulated
		}
		return true
	}
	names := slices.Sorted(maps.Keys(specific))
	names = append(names, managedOnlyFlags()...)
	names = append(names, simIgnoredFlags()...)
	if err := a.checkModels(); err != nil {
		return nil, err
	}
	given := func(f string) bool {
		if f == "model" {
			// Only a value for this engine (KIND=ID, or a plain ID) counts.
			return changed(f) && a.modelFor(kind) != ""
		}
		return changed(f)
	}
	for _, f := range names {
		if given(f) && !applies(f) && !slices.Contains(bad, "--"+f) {
			bad = append(bad, "--"+f)
		}
	}
	if len(bad) > 0 {
		how := "--engine " + kind
		if url {
			how += " with --engine-url"
		}
		var takes []string
		for _, f := range d.Flags {
			if applies(f) {
				takes = append(takes, "--"+f)
			}
		}
		if len(takes) == 0 {
			takes = []string{"none"}
		}
		verb := "does"
		if len(bad) > 1 {
			verb = "do"
		}
		return bad, invalidf("%s %s not apply to %s (its engine-specific flags: %s)", strings.Join(bad, ", "), verb, how, strings.Join(takes, ", "))
	}
	if d.Simulated {
		return nil, checkSimPreset(a.v.GetString("sim-preset"))
	}
	_, err := a.engineSpec(kind, engineEnv{})
	return nil, err
}

// checkSimPreset validates --sim-preset.
func checkSimPreset(p string) error {
	switch p {
	case "", "drift", "no-release", "small-batch", "prefix-cache":
		return nil
	}
	return invalidf("--sim-preset %q: valid presets are drift, no-release, small-batch and prefix-cache", p)
}

// perEngineFlags checks the flags of a run against several engines: a flag
// must apply to at least one of them, and each engine's run is then
// checked with only the flags that apply to it (--max-model-len for the
// llama.cpp of `--engine sim --engine llamacpp`, say). It returns the
// changed function of each engine, by position in kinds.
func (a *app) perEngineFlags(kinds []string, changed func(string) bool) ([]func(string) bool, error) {
	defer func(e string) { a.engine = e }(a.engine)
	bad := make([][]string, len(kinds))
	var firstErr error
	for i, k := range kinds {
		a.engine = k
		b, err := a.inapplicableFlags(changed)
		if err != nil && b == nil {
			return nil, fmt.Errorf("engine %s: %w", k, err)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("engine %s: %w", k, err)
		}
		bad[i] = b
	}
	for _, f := range bad[0] {
		everywhere := true
		for _, b := range bad[1:] {
			everywhere = everywhere && slices.Contains(b, f)
		}
		if everywhere {
			return nil, firstErr
		}
	}
	out := make([]func(string) bool, len(kinds))
	for i := range kinds {
		skip := bad[i]
		out[i] = func(f string) bool { return changed(f) && !slices.Contains(skip, "--"+f) }
		a.engine = kinds[i]
		if err := a.checkRunFlags(out[i]); err != nil {
			return nil, fmt.Errorf("engine %s: %w", kinds[i], err)
		}
	}
	return out, nil
}

// modelValues are the --model values: each a plain model id, or KIND=ID
// where KIND is an engine kind.
func (a *app) modelValues() (plain []string, byKind map[string]string, err error) {
	byKind = map[string]string{}
	for _, v := range a.v.GetStringSlice("model") {
		k, id, ok := strings.Cut(v, "=")
		if !ok {
			plain = append(plain, v)
			continue
		}
		if _, known := a.engines.Lookup(k); !known {
			return nil, nil, invalidf("--model %q: %q is not an engine kind (KIND=ID gives one engine its model; kinds: %s)", v, k, strings.Join(a.engines.Kinds(), ", "))
		}
		if _, dup := byKind[k]; dup {
			return nil, nil, invalidf("--model %s= given twice", k)
		}
		byKind[k] = id
	}
	if len(plain) > 1 {
		return nil, nil, invalidf("--model given %d times without KIND=: give one model, or one KIND=ID per engine", len(plain))
	}
	return plain, byKind, nil
}

// checkModels checks the --model values: at most one plain id, KIND=ID
// only for a kind the run has.
func (a *app) checkModels() error {
	_, byKind, err := a.modelValues()
	if err != nil {
		return err
	}
	kinds := a.v.GetStringSlice("engine")
	for k := range byKind {
		if !slices.Contains(kinds, k) && !(len(kinds) <= 1 && k == a.engineKind()) {
			return invalidf("--model %s=%s: the run has no engine %s (engines: %s)", k, byKind[k], k, strings.Join(kinds, ", "))
		}
	}
	return nil
}

// modelFor is the model of engine kind: its own KIND=ID value, else the
// plain --model value, else "".
func (a *app) modelFor(kind string) string {
	plain, byKind, err := a.modelValues()
	if err != nil {
		return ""
	}
	if m, ok := byKind[kind]; ok {
		return m
	}
	if len(plain) == 1 {
		return plain[0]
	}
	return ""
}
