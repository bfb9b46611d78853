// Package external is an inference server joulebench did not start
// (--engine-url): an OpenAI-compatible server (vLLM, SGLang, llama-server,
// ...) or Ollama. Start and Stop do nothing; the run has no startup or
// release stage, so the lifecycle metrics are not applicable. Readiness is
// the server answering; identity is read from the endpoints its kind has
// (the kind, when given, says which), else from /v1/models.
package external

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/v1models"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/vllm"
)

// Config describes the running server.
type Config struct {
	// URL is the server's root (a trailing /v1 is dropped).
	URL string
	// API is engines.APIOpenAI (default) or engines.APIOllama.
	API string
	// Kind, when known, is "vllm", "sglang", "llamacpp" or "ollama": it
	// selects the identity endpoints. "" or "openai" reads /v1/models only
	// (and whatever else answers).
	Kind string
	// Model is the model requested.
	Model string
	HTTP  *http.Client
}

// Engine is an already running server.
type Engine struct {
	cfg    Config
	srv    *process.Server // for its client and JSON queries; never started
	exited chan struct{}

	mu                   sync.Mutex
	id                   engines.Identity
	hasID                bool
	thinking, requestAPI string
}

var _ engines.Engine = (*Engine)(nil)

// New checks the configuration.
func New(cfg Config) (*Engine, error) {
	u := strings.TrimRight(cfg.URL, "/")
	u = strings.TrimSuffix(u, "/v1")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("engine URL %q: want http://HOST:PORT or https://...", cfg.URL)
	}
	cfg.URL = u
	switch cfg.API {
	case "":
		cfg.API = engines.APIOpenAI
		if cfg.Kind == "ollama" {
			cfg.API = engines.APIOllama
		}
	case engines.APIOpenAI, engines.APIOllama:
	default:
		return nil, fmt.Errorf("engine API %q: want openai or ollama", cfg.API)
	}
	switch cfg.Kind {
	case "", "openai":
		cfg.Kind = "openai"
		if cfg.API == engines.APIOllama {
			cfg.Kind = "ollama"
		}
	case "vllm", "sglang", "llamacpp", "ollama":
	default:
		return nil, fmt.Errorf("engine kind %q: want vllm, sglang, llamacpp, ollama or openai", cfg.Kind)
	}
	health := "/v1/models"
	switch {
	case cfg.Kind == "ollama":
		health = "/api/version"
	case cfg.Kind == "vllm" || cfg.Kind == "sglang" || cfg.Kind == "llamacpp":
		health = "/health"
	}
	srv := process.NewServer(process.Spec{Name: cfg.Kind + " at " + cfg.URL}, cfg.URL, health)
	srv.HTTP = cfg.HTTP
	return &Engine{cfg: cfg, srv: srv, exited: make(chan struct{})}, nil
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// Kind is the server's kind ("openai" when unknown).
func (e *Engine) Kind() string { return e.cfg.Kind }

// External is true: joulebench neither starts nor stops this server, and
// the run has no startup or release stage.
func (e *Engine) External() bool { return true }

// Simulated is false.
func (e *Engine) Simulated() bool { return false }

// BaseURL is the server's root.
func (e *Engine) BaseURL() string { return e.cfg.URL }

// API is the API requests use.
func (e *Engine) API() string { return e.cfg.API }

// Start does nothing: the server runs already.
func (e *Engine) Start(ctx context.Context) error { return ctx.Err() }

// WaitReady waits until the server answers its health endpoint (for
// Ollama, also that it has the model).
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		last = process.Probe(ctx, e.srv.Client(), e.srv.HealthURL())
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not answering after %s: GET %s: last answer: %v", e.cfg.Kind, timeout, e.srv.HealthURL(), last)
		case <-t.C:
		}
	}
}

// Stop does nothing (the server is not ours) and returns the zero time.
func (e *Engine) Stop(context.Context, time.Duration) (time.Time, error) { return time.Time{}, nil }

// Exited is never closed: an external server that goes away shows as
// failed requests.
func (e *Engine) Exited() <-chan struct{} { return e.exited }

// MetricsURL is /metrics for OpenAI-compatible servers (vLLM, SGLang,
// llama-server with --metrics); Ollama has none.
func (e *Engine) MetricsURL() string {
	if e.cfg.Kind == "ollama" {
		return ""
	}
	return e.cfg.URL + "/metrics"
}

// Expect is the model id requested.
func (e *Engine) Expect() engines.Identity {
	if e.cfg.Kind == "ollama" {
		return engines.Identity{Model: ollama.NormalizeName(e.cfg.Model)}
	}
	return engines.Identity{Model: e.cfg.Model}
}

// Identity reads what the server says about itself.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	var id engines.Identity
	var err error
	switch e.cfg.Kind {
	case "vllm":
		id, err = vllm.Identity(ctx, e.srv, e.cfg.Model)
	case "sglang":
		id, err = sglang.Identity(ctx, e.srv, e.cfg.Model)
	case "llamacpp":
		id, err = llamacpp.Identity(ctx, e.srv, e.cfg.Model)
	case "ollama":
		api := &ollama.API{Base: e.cfg.URL, HTTP: e.srv.Client()}
		id, err = api.Identity(ctx, e.cfg.Model)
	default:
		id, err = e.openaiIdentity(ctx)
	}
	if err == nil {
		e.mu.Lock()
		e.id, e.hasID = id, true
		e.mu.Unlock()
	}
	return id, err
}

// openaiIdentity reads /v1/models, then whichever of vLLM's /version,
// llama.cpp's /props and SGLang's /get_server_info answers, for the
// version.
func (e *Engine) openaiIdentity(ctx context.Context) (engines.Identity, error) {
	m, raw, err := v1models.List(ctx, e.srv, e.cfg.Model)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("identity: %w", err)
	}
	id := engines.Identity{Model: m.ID, ContextLength: m.MaxModelLen, Raw: map[string]any{"/v1/models": raw}}
	var v struct {
		Version string `json:"version"`
	}
	if raw, err := e.srv.GetJSON(ctx, "/version", &v); err == nil && v.Version != "" {
		id.EngineVersion, id.Raw["/version"] = v.Version, raw
		return id, nil
	}
	var props llamacpp.Props
	if raw, err := e.srv.GetJSON(ctx, "/props", &props); err == nil && props.BuildInfo != "" {
		id.EngineVersion, id.Raw["/props"] = props.BuildInfo, raw
		return id, nil
	}
	var si sglang.ServerInfo
	if raw, err := e.srv.GetJSON(ctx, "/get_server_info", &si); err == nil && si.Version != "" {
		id.EngineVersion, id.Raw["/get_server_info"] = si.Version, process.RedactValue(raw)
		id.TensorParallel, id.Revision = si.TPSize, si.Revision
	}
	return id, nil
}

// ResolveModel returns the model to request when none was given: the
// first listed by /v1/models (or Ollama's /api/tags).
func (e *Engine) ResolveModel(ctx context.Context) (string, error) {
	if e.cfg.API == engines.APIOllama || e.cfg.Kind == "ollama" {
		var tags struct {
			Models []struct {
				Name string `json:"name"`
			} `json:"models"`
		}
		if _, err := e.srv.GetJSON(ctx, "/api/tags", &tags); err != nil {
			return "", err
		}
		if len(tags.Models) == 0 {
			return "", fmt.Errorf("GET %s/api/tags lists no model", e.cfg.URL)
		}
		return tags.Models[0].Name, nil
	}
	m, _, err := v1models.List(ctx, e.srv, "")
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// SetRunInfo records the run's thinking setting and request API.
func (e *Engine) SetRunInfo(thinking, requestAPI string) {
	e.mu.Lock()
	e.thinking, e.requestAPI = thinking, requestAPI
	e.mu.Unlock()
}

// SetModel sets the model requested (after ResolveModel).
func (e *Engine) SetModel(m string) { e.cfg.Model = m }

// Info describes the server for run.json.
func (e *Engine) Info() archive.EngineInfo {
	info := archive.EngineInfo{
		Kind:    e.cfg.Kind,
		URL:     process.Redact([]string{e.cfg.URL})[0],
		API:     e.cfg.API,
		Managed: false,
		Model:   e.cfg.Model,
		Extra:   map[string]any{"external": true},
	}
	e.mu.Lock()
	info.Thinking = e.thinking
	if e.requestAPI != "" {
		info.Extra["request_api"] = e.requestAPI
	}
	if e.hasID {
		info.Version = e.id.EngineVersion
		info.ServedModel = e.id.Model
		info.Revision = e.id.Revision
		info.ContextLength = e.id.ContextLength
		info.TensorParallel = e.id.TensorParallel
	}
	e.mu.Unlock()
	return info
}
