// Package sglang runs SGLang as a managed engine:
//
//	python -m sglang.launch_server --model-path M --host 127.0.0.1 --port P
//	  --tp N --random-seed S --enable-metrics --served-model-name NAME
//	  [--context-length L] [--revision R] [extra...]
//
// ready when GET /health answers 200 (and GET /health_generate, which
// runs one generation, when asked); identity from GET /get_model_info
// (model_path), GET /get_server_info (the server arguments: tp_size,
// context_length, revision, served_model_name; and version) and GET
// /v1/models (id, max_model_len). Engine state is scraped from /metrics
// (sglang:* families, enabled by --enable-metrics).
package sglang

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/internal/tokenize"
	"github.com/joulebench/joulebench/engines/internal/v1models"
	"github.com/joulebench/joulebench/engines/process"
)

// Kind is the engine kind.
const Kind = "sglang"

// DefaultFamilies are the /metrics families kept by default.
func DefaultFamilies() []string {
	return []string{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage"}
}

// Descriptor is SGLang, started by joulebench or already running. It
// reports the model revision (its --revision).
func Descriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:      Kind,
		Doc:       "SGLang (python -m sglang.launch_server)",
		API:       engines.APIOpenAI,
		Flags:     []string{"model", "revision", "tp", "max-model-len", FlagHealthGenerate},
		Settings:  []engines.Setting{{Flag: FlagHealthGenerate, Doc: "SGLang: also wait for /health_generate (one generated token) before ready"}},
		Processes: []string{"sglang"},
		Validate: func(o engines.Options) error {
			if o.Model == "" {
				return fmt.Errorf("--engine %s needs --model (a path or Hugging Face id)", Kind)
			}
			return nil
		},
		Start: func(o engines.Options) (engines.Engine, error) {
			return New(Config{Common: o.Common, HealthGenerate: o.Settings.Bool(FlagHealthGenerate), RunDir: o.RunDir})
		},
		Attach: func(r engines.Remote) (engines.Engine, error) {
			return external.New(external.Config{URL: r.URL, API: r.API, Kind: Kind, Model: r.Model, HTTP: r.HTTP, Note: r.Note,
				Health: "/health", MetricsPath: "/metrics", Identity: Identity})
		},
		DefaultFamilies: DefaultFamilies(),
		ReportsRevision: true,
	}
}

// FlagHealthGenerate is SGLang's own setting: readiness waits for
// /health_generate (Config.HealthGenerate).
const FlagHealthGenerate = "health-generate"

// Config is the frozen configuration of an SGLang server: of the common
// options, Bin is the Python interpreter (default "python", else
// "python3" when only that is installed), Model --model-path (a path or
// Hugging Face id), Revision --revision when set, TP --tp (default 1),
// MaxModelLen --context-length when > 0, Args appended to the command
// line; ModelFile and Slots are not read.
type Config struct {
	engines.Common
	// ServedName is --served-model-name (default Model).
	ServedName string
	// HealthGenerate also waits for GET /health_generate (one generated
	// token) before the engine counts as ready.
	HealthGenerate bool
	// RunDir is the working directory; compile caches go under
	// RunDir/compile-cache.
	RunDir string
}

// Engine is a managed SGLang server.
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
		return nil, fmt.Errorf("sglang: no model")
	}
	if cfg.Bin == "" {
		cfg.Bin = "python"
		if _, err := exec.LookPath("python"); err != nil {
			if _, err3 := exec.LookPath("python3"); err3 == nil {
				cfg.Bin = "python3"
			}
		}
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
	argv := []string{cfg.Bin, "-m", "sglang.launch_server",
		"--model-path", cfg.Model,
		"--host", "127.0.0.1", "--port", strconv.Itoa(cfg.Port),
		"--tp", strconv.Itoa(cfg.TP),
		"--random-seed", strconv.FormatInt(cfg.Seed, 10),
		"--enable-metrics",
		"--served-model-name", cfg.ServedName,
	}
	if cfg.MaxModelLen > 0 {
		argv = append(argv, "--context-length", strconv.Itoa(cfg.MaxModelLen))
	}
	if cfg.Revision != "" {
		argv = append(argv, "--revision", cfg.Revision)
	}
	argv = append(argv, cfg.Args...)
	m := process.NewManaged(process.ManagedSpec{Kind: Kind, API: engines.APIOpenAI, Argv: argv, Overrides: cfg.Env,
		// A snapshot missing from the Hugging Face cache fails fast
		// instead of being downloaded inside the startup stage.
		Env:      map[string]string{"HF_HUB_OFFLINE": "1"},
		CacheEnv: map[string]string{"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton", "FLASHINFER_WORKSPACE_BASE": "flashinfer"},
		Port:     cfg.Port, Health: "/health", RunDir: cfg.RunDir, Log: cfg.Log, HTTP: cfg.HTTP})
	e := &Engine{cfg: cfg, Managed: m}
	srv := m.Server
	if cfg.HealthGenerate {
		// One generated token may take longer than a probe's usual bound.
		hc := &http.Client{}
		if cfg.HTTP != nil {
			hc.Transport = cfg.HTTP.Transport
		}
		srv.Ready = func(ctx context.Context) error {
			if err := process.ProbeWithin(ctx, hc, srv.Base+"/health_generate", 30*time.Second); err != nil {
				return fmt.Errorf("GET %s/health_generate: %v: %w", srv.Base, err, process.ErrRetry)
			}
			return nil
		}
	}
	return e, nil
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// RequestModel is the served model name requests carry.
func (e *Engine) RequestModel() string { return e.cfg.ServedName }

// MetricsURL is the Prometheus endpoint.
func (e *Engine) MetricsURL() string { return e.Base + "/metrics" }

// Expect is what the identity check compares: served model id, revision
// (when set), context length (when set) and tensor-parallel size.
func (e *Engine) Expect() engines.Identity {
	return engines.Identity{Model: e.cfg.ServedName, Revision: e.cfg.Revision, ContextLength: e.cfg.MaxModelLen, TensorParallel: e.cfg.TP,
		Precision: engines.ArgsPrecision(e.cfg.Args)}
}

// Identity asks GET /get_model_info, /get_server_info and /v1/models.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	id, err := Identity(ctx, e.Server, e.cfg.ServedName)
	if err == nil {
		if e.weights != nil {
			// The snapshot checked before the baseline says what the
			// server's arguments leave to the model's config.json.
			id.Precision = id.Precision.Fill(engines.LocalModelPrecision(e.weights.Path))
		}
		e.SetIdentity(id)
	}
	return id, err
}

// ServerInfo is the part of GET /get_server_info joulebench reads (the
// server arguments, scheduler info and version).
type ServerInfo struct {
	ModelPath       string `json:"model_path"`
	ServedModelName string `json:"served_model_name"`
	Revision        string `json:"revision"`
	TPSize          int    `json:"tp_size"`
	DPSize          int    `json:"dp_size"`
	PPSize          int    `json:"pp_size"`
	ContextLength   int    `json:"context_length"`
	RandomSeed      int64  `json:"random_seed"`
	Version         string `json:"version"`
	// DType and Quantization are the server's --dtype and --quantization
	// ("auto" and null when not given).
	DType        string `json:"dtype"`
	Quantization string `json:"quantization"`
}

// Identity reads an SGLang server's identity (also used for an already
// running one). Secrets in the server arguments (api_key, ...) are
// redacted from Raw.
func Identity(ctx context.Context, srv *process.Server, want string) (engines.Identity, error) {
	var info ServerInfo
	rawInfo, err := srv.GetJSON(ctx, "/get_server_info", &info)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("sglang identity: %w", err)
	}
	var modelInfo struct {
		ModelPath     string `json:"model_path"`
		WeightVersion string `json:"weight_version"`
	}
	rawModelInfo, err := srv.GetJSON(ctx, "/get_model_info", &modelInfo)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("sglang identity: %w", err)
	}
	m, rawModels, err := v1models.List(ctx, srv, want)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("sglang identity: %w", err)
	}
	ctxLen := m.MaxModelLen
	if ctxLen == 0 {
		ctxLen = info.ContextLength
	}
	// The server's dtype and quantization where set, the model
	// directory's config.json (when on this machine) for the rest.
	dir := ""
	if st, err := os.Stat(modelInfo.ModelPath); err == nil && st.IsDir() {
		dir = modelInfo.ModelPath
	}
	prec := engines.ResolvePrecision([]string{"--dtype", info.DType, "--quantization", info.Quantization}, dir)
	return engines.Identity{
		Model:          m.ID,
		Revision:       info.Revision,
		EngineVersion:  info.Version,
		ContextLength:  ctxLen,
		TensorParallel: info.TPSize,
		Precision:      prec,
		Raw: map[string]any{
			"/get_server_info": process.RedactValue(rawInfo),
			"/get_model_info":  rawModelInfo,
			"/v1/models":       rawModels,
		},
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
	if info.TensorParallel == 0 {
		info.TensorParallel = e.cfg.TP
	}
	if _, ok := e.LastIdentity(); !ok {
		dir := ""
		if e.weights != nil {
			dir = e.weights.Path
		}
		engines.ResolvePrecision(e.cfg.Args, dir).Record(&info)
	}
	info.Extra["seed"] = e.cfg.Seed
	info.Extra["port"] = e.cfg.Port
	info.Extra["health_generate"] = e.cfg.HealthGenerate
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
