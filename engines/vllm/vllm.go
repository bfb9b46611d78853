// Package vllm runs vLLM as a managed engine:
//
//	vllm serve MODEL --host 127.0.0.1 --port P --tensor-parallel-size N
//	  --max-model-len L --seed S --served-model-name NAME [--revision R] [extra...]
//
// ready when GET /health answers 200; identity from GET /version
// ({"version"}) and GET /v1/models (data[].id, max_model_len, root).
// vLLM reports neither the model revision nor the tensor-parallel size
// over HTTP, so those are recorded from the command line and not checked.
// Engine state is scraped from /metrics (vllm:* families).
package vllm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/internal/tokenize"
	"github.com/joulebench/joulebench/engines/internal/v1models"
	"github.com/joulebench/joulebench/engines/process"
)

// Kind is the engine kind.
const Kind = "vllm"

// DefaultFamilies are the /metrics families kept by default.
func DefaultFamilies() []string {
	return []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}
}

// Descriptor is vLLM, started by joulebench or already running.
func Descriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:      Kind,
		Doc:       "vLLM (vllm serve)",
		API:       engines.APIOpenAI,
		Flags:     []string{"model", "revision", "tp", "max-model-len"},
		Processes: []string{"vllm"},
		Validate: func(o engines.Options) error {
			if o.Model == "" {
				return fmt.Errorf("--engine %s needs --model (a path or Hugging Face id)", Kind)
			}
			return nil
		},
		Start: func(o engines.Options) (engines.Engine, error) {
			return New(Config{Common: o.Common, RunDir: o.RunDir})
		},
		Attach: func(r engines.Remote) (engines.Engine, error) {
			return external.New(external.Config{URL: r.URL, API: r.API, Kind: Kind, Model: r.Model, HTTP: r.HTTP, Note: r.Note,
				Health: "/health", MetricsPath: "/metrics", Identity: Identity})
		},
		DefaultFamilies: DefaultFamilies(),
	}
}

// Config is the frozen configuration of a vLLM server: of the common
// options, Bin is the vllm executable (default "vllm"), Model the model
// path or Hugging Face id given to vllm serve, Revision --revision when
// set, TP --tensor-parallel-size (default 1), MaxModelLen --max-model-len
// when > 0, Args appended to the command line; ModelFile and Slots are not
// read.
type Config struct {
	engines.Common
	// ServedName is --served-model-name, the id clients request (default
	// Model).
	ServedName string
	// RunDir is the engine's working directory; its compile caches go
	// under RunDir/compile-cache ("" = the current directory, no cache
	// override).
	RunDir string
}

// Engine is a managed vLLM server.
type Engine struct {
	*process.Managed
	cfg Config
	// weights, once checked, are recorded in Info.
	weights *engines.Weights
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.MetricsSource  = (*Engine)(nil)
	_ engines.Expecter       = (*Engine)(nil)
	_ engines.ModelNamer     = (*Engine)(nil)
	_ engines.Tokenizer      = (*Engine)(nil)
	_ engines.WeightsChecker = (*Engine)(nil)
)

// New freezes the command line (choosing a free port when Port is 0).
func New(cfg Config) (*Engine, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("vllm: no model")
	}
	if cfg.Bin == "" {
		cfg.Bin = "vllm"
	}
	if cfg.ServedName == "" {
		cfg.ServedName = cfg.Model
	}
	if cfg.TP <= 0 {
		cfg.TP = 1
	}
	port, err := process.ResolvePort(Kind, cfg.Port)
	if err != nil {
		return nil, err
	}
	cfg.Port = port
	argv := []string{cfg.Bin, "serve", cfg.Model,
		"--host", "127.0.0.1", "--port", strconv.Itoa(cfg.Port),
		"--tensor-parallel-size", strconv.Itoa(cfg.TP),
		"--seed", strconv.FormatInt(cfg.Seed, 10),
		"--served-model-name", cfg.ServedName,
	}
	if cfg.MaxModelLen > 0 {
		argv = append(argv, "--max-model-len", strconv.Itoa(cfg.MaxModelLen))
	}
	if cfg.Revision != "" {
		argv = append(argv, "--revision", cfg.Revision)
	}
	argv = append(argv, cfg.Args...)
	// torch.compile, Inductor and Triton caches of this run only.
	m := process.NewManaged(process.ManagedSpec{Kind: Kind, API: engines.APIOpenAI, Argv: argv, Overrides: cfg.Env,
		// A snapshot missing from the Hugging Face cache fails fast
		// instead of being downloaded inside the startup stage.
		Env:      map[string]string{"HF_HUB_OFFLINE": "1"},
		CacheEnv: map[string]string{"VLLM_CACHE_ROOT": "vllm", "TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"},
		Port:     cfg.Port, Health: "/health", RunDir: cfg.RunDir, Log: cfg.Log, HTTP: cfg.HTTP})
	return &Engine{cfg: cfg, Managed: m}, nil
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// RequestModel is the served model name requests carry.
func (e *Engine) RequestModel() string { return e.cfg.ServedName }

// MetricsURL is the Prometheus endpoint.
func (e *Engine) MetricsURL() string { return e.Base + "/metrics" }

// Expect is what the identity check compares: the served model id, when
// set the maximum model length, and the precision --dtype and
// --quantization ask for (--engine-arg). Revision and tensor-parallel
// size are not reported by vLLM.
func (e *Engine) Expect() engines.Identity {
	return engines.Identity{Model: e.cfg.ServedName, ContextLength: e.cfg.MaxModelLen, Precision: engines.ArgsPrecision(e.cfg.Args)}
}

// precision is the precision the server runs the model in: vLLM does not
// report it, so it is its --dtype and --quantization options over the
// model directory's config.json (the weights checked before the
// baseline, else the local directory or Hugging Face snapshot of Model).
func (e *Engine) precision() engines.Precision {
	dir := ""
	if e.weights != nil {
		dir = e.weights.Path
	} else if w, err := engines.LocalHFWeights(e.cfg.Model, e.cfg.Revision, engines.HFCacheDir(engines.EnvLookup(e.cfg.Env))); err == nil {
		dir = w.Path
	}
	return engines.ResolvePrecision(e.cfg.Args, dir)
}

// Identity asks GET /version and GET /v1/models.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	id, err := Identity(ctx, e.Server, e.cfg.ServedName)
	if err == nil {
		id.Precision = e.precision()
		e.SetIdentity(id)
	}
	return id, err
}

// Identity reads a vLLM server's identity through srv's client and base
// URL (also used for an already running vLLM): the model listed under
// want (else the first), its max_model_len, and the version.
func Identity(ctx context.Context, srv *process.Server, want string) (engines.Identity, error) {
	var version struct {
		Version string `json:"version"`
	}
	rawVersion, err := srv.GetJSON(ctx, "/version", &version)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("vllm identity: %w", err)
	}
	m, rawModels, err := v1models.List(ctx, srv, want)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("vllm identity: %w", err)
	}
	return engines.Identity{
		Model:         m.ID,
		EngineVersion: version.Version,
		ContextLength: m.MaxModelLen,
		// The model directory /v1/models names as root, when it is on
		// this machine (an already running vLLM).
		Precision: engines.LocalModelPrecision(m.Root),
		Raw:       map[string]any{"/version": rawVersion, "/v1/models": rawModels},
	}, nil
}

// Info describes the engine for run.json.
func (e *Engine) Info() record.EngineInfo {
	info := e.BaseInfo()
	if e.weights != nil {
		info.Extra["weights"] = *e.weights
	}
	info.Model = e.cfg.Model
	if info.ServedModel == "" {
		info.ServedModel = e.cfg.ServedName
	}
	if info.Revision == "" {
		info.Revision = e.cfg.Revision
	}
	if info.ContextLength == 0 {
		info.ContextLength = e.cfg.MaxModelLen
	}
	info.TensorParallel = e.cfg.TP
	if _, ok := e.LastIdentity(); !ok {
		e.precision().Record(&info)
	}
	info.Extra["seed"] = e.cfg.Seed
	info.Extra["port"] = e.cfg.Port
	return info
}

// CheckWeights confirms, before the baseline, that the model is a local
// directory or a snapshot in the Hugging Face cache (the engine runs with
// HF_HUB_OFFLINE=1, so it would fail rather than download), and records
// which snapshot (engine.extra.weights in run.json).
func (e *Engine) CheckWeights(context.Context) (engines.Weights, error) {
	w, err := engines.LocalHFWeights(e.cfg.Model, e.cfg.Revision, engines.HFCacheDir(engines.EnvLookup(e.cfg.Env)))
	if err != nil {
		return engines.Weights{}, fmt.Errorf("%s: %w", Kind, err)
	}
	e.weights = &w
	return w, nil
}

// CountTokens counts text's tokens with the server's own tokenizer
// (POST /tokenize).
func (e *Engine) CountTokens(ctx context.Context, text string) (int, error) {
	return tokenize.OpenAIServer(ctx, e.Server.Client(), e.Base, e.cfg.ServedName, text)
}
