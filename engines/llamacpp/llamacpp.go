// Package llamacpp runs llama.cpp's llama-server as a managed engine:
//
//	llama-server -m FILE --host 127.0.0.1 --port P --metrics -np SLOTS
//	  [-c SLOTS*L] --seed S --alias NAME [extra...]
//
// ready when GET /health answers 200; identity from GET /props
// (build_info, model_path, total_slots, default_generation_settings.n_ctx
// — the context of one slot) and GET /v1/models (data[].id). Its
// "context length" is the context of one slot, the longest request, which
// is what vLLM's --max-model-len means too: a run asking for L tokens gets
// -c L*SLOTS. Engine state is scraped from /metrics (llamacpp:*; the
// kv_cache_usage_ratio gauge only where the build still has it).
package llamacpp

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/internal/tokenize"
	"github.com/joulebench/joulebench/engines/process"
)

// Kind is the engine kind.
const Kind = "llamacpp"

// DefaultFamilies are the /metrics families kept by default.
func DefaultFamilies() []string {
	return []string{"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio"}
}

// Descriptor is llama.cpp's llama-server, started by joulebench or
// already running.
func Descriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:      Kind,
		Doc:       "llama.cpp (llama-server)",
		API:       engines.APIOpenAI,
		Flags:     []string{"model", "model-file", "max-model-len", "slots"},
		Processes: []string{"llama-server"},
		Validate: func(o engines.Options) error {
			if o.ModelFile == "" {
				return fmt.Errorf("--engine %s needs --model-file (a GGUF file)", Kind)
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

// DefaultSlots is -np when Config.Slots is 0.
const DefaultSlots = 4

// Config is the frozen configuration of a llama-server: of the common
// options, Bin is the llama-server executable (default "llama-server"),
// ModelFile the GGUF file (-m), Model --alias, the model id clients
// request (default: the file name without .gguf), Slots -np, the requests
// served at once (default DefaultSlots), MaxModelLen the context of one
// slot (0: the server's default, from the model; -c is MaxModelLen*Slots),
// Args appended to the command line; Revision and TP are not read.
type Config struct {
	engines.Common
	// RunDir is the working directory.
	RunDir string
}

// Engine is a managed llama-server.
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
	if cfg.ModelFile == "" {
		return nil, fmt.Errorf("llamacpp: no model file (-m)")
	}
	if abs, err := filepath.Abs(cfg.ModelFile); err == nil {
		cfg.ModelFile = abs
	}
	if cfg.Bin == "" {
		cfg.Bin = "llama-server"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultAlias(cfg.ModelFile)
	}
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots
	}
	port, err := process.ResolvePort(Kind, cfg.Port)
	if err != nil {
		return nil, err
	}
	cfg.Port = port
	argv := []string{cfg.Bin, "-m", cfg.ModelFile,
		"--host", "127.0.0.1", "--port", strconv.Itoa(cfg.Port),
		"--metrics",
		"-np", strconv.Itoa(cfg.Slots),
	}
	if cfg.MaxModelLen > 0 {
		argv = append(argv, "-c", strconv.Itoa(cfg.MaxModelLen*cfg.Slots))
	}
	argv = append(argv, "--seed", strconv.FormatInt(cfg.Seed, 10), "--alias", cfg.Model)
	argv = append(argv, cfg.Args...)
	m := process.NewManaged(process.ManagedSpec{Kind: Kind, Name: "llama-server", API: engines.APIOpenAI, Argv: argv, Overrides: cfg.Env,
		Port: cfg.Port, Health: "/health", RunDir: cfg.RunDir, Log: cfg.Log, HTTP: cfg.HTTP})
	return &Engine{cfg: cfg, Managed: m}, nil
}

// DefaultAlias is the model id of a GGUF file: its name without .gguf.
func DefaultAlias(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".gguf")
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// RequestModel is the alias requests carry.
func (e *Engine) RequestModel() string { return e.cfg.Model }

// MetricsURL is the Prometheus endpoint (--metrics).
func (e *Engine) MetricsURL() string { return e.Base + "/metrics" }

// Expect is what the identity check compares: the alias, when set the
// context of one slot, and the precision of the GGUF file asked for (its
// header's general.file_type).
func (e *Engine) Expect() engines.Identity {
	p, _ := engines.GGUFPrecision(e.cfg.ModelFile)
	return engines.Identity{Model: e.cfg.Model, ContextLength: e.cfg.MaxModelLen, Precision: p}
}

// Identity asks GET /props and GET /v1/models.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	id, err := Identity(ctx, e.Server, e.cfg.Model)
	if err == nil {
		e.SetIdentity(id)
	}
	return id, err
}

// Props is the part of GET /props joulebench reads.
type Props struct {
	DefaultGenerationSettings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	TotalSlots int    `json:"total_slots"`
	ModelPath  string `json:"model_path"`
	ModelAlias string `json:"model_alias"`
	BuildInfo  string `json:"build_info"`
}

// Identity reads a llama-server's identity (also used for an already
// running one): the model listed under want (else the first), the build,
// and the context of one slot.
func Identity(ctx context.Context, srv *process.Server, want string) (engines.Identity, error) {
	var props Props
	rawProps, err := srv.GetJSON(ctx, "/props", &props)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("llama.cpp identity: %w", err)
	}
	var list struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				NCtx      int `json:"n_ctx"`
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	rawModels, err := srv.GetJSON(ctx, "/v1/models", &list)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("llama.cpp identity: %w", err)
	}
	if len(list.Data) == 0 {
		return engines.Identity{}, fmt.Errorf("llama.cpp identity: GET %s/v1/models lists no model", srv.Base)
	}
	m := list.Data[0]
	for _, d := range list.Data {
		if d.ID == want {
			m = d
		}
	}
	nctx := props.DefaultGenerationSettings.NCtx
	if nctx == 0 {
		nctx = m.Meta.NCtx
	}
	// The file the server loaded (/props model_path), when it is on this
	// machine: its GGUF header's file type.
	var prec engines.Precision
	if props.ModelPath != "" {
		if p, err := engines.GGUFPrecision(props.ModelPath); err == nil {
			prec = p
		}
	}
	return engines.Identity{
		Model:         m.ID,
		EngineVersion: props.BuildInfo,
		ContextLength: nctx,
		Precision:     prec,
		Raw:           map[string]any{"/props": trimProps(rawProps), "/v1/models": rawModels},
	}, nil
}

// trimProps drops the bulky members of /props (the chat template is kept:
// it is part of what was served).
func trimProps(raw any) any {
	m, ok := raw.(map[string]any)
	if !ok {
		return raw
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k == "webui_settings" || k == "ui_settings" {
			continue
		}
		out[k] = v
	}
	return out
}

// Info describes the engine for run.json.
func (e *Engine) Info() record.EngineInfo {
	info := e.BaseInfo()
	if e.weights != nil {
		info.Extra["weights"] = *e.weights
	}
	info.Model = e.cfg.Model
	if info.ServedModel == "" {
		info.ServedModel = e.cfg.Model
	}
	if info.ContextLength == 0 {
		info.ContextLength = e.cfg.MaxModelLen
	}
	info.ModelFormat = "gguf"
	if _, ok := e.LastIdentity(); !ok {
		if p, err := engines.GGUFPrecision(e.cfg.ModelFile); err == nil {
			p.Record(&info)
		}
	}
	info.Extra["model_file"] = e.cfg.ModelFile
	info.Extra["slots"] = e.cfg.Slots
	info.Extra["seed"] = e.cfg.Seed
	info.Extra["port"] = e.cfg.Port
	return info
}

// CheckWeights hashes the GGUF file before the baseline (its sha256 goes
// to run.json's engine.extra.weights).
func (e *Engine) CheckWeights(ctx context.Context) (engines.Weights, error) {
	w, err := engines.GGUFWeights(ctx, e.cfg.ModelFile)
	if err != nil {
		return engines.Weights{}, fmt.Errorf("%s: %w", Kind, err)
	}
	e.weights = &w
	return w, nil
}

// CountTokens counts text's tokens with the server's own tokenizer
// (POST /tokenize).
func (e *Engine) CountTokens(ctx context.Context, text string) (int, error) {
	return tokenize.LlamaCpp(ctx, e.Server.Client(), e.Base, text)
}
