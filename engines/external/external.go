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
	"github.com/joulebench/joulebench/engines/process"
)

// Kind is the generic kind: any OpenAI-compatible server.
const Kind = "openai"

// Descriptor is the generic OpenAI-compatible server: only with
// --engine-url, identity from /v1/models and whichever engine endpoint
// answers for the version.
func Descriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:    Kind,
		Doc:     "any OpenAI-compatible server",
		API:     engines.APIOpenAI,
		Generic: true,
		Attach: func(r engines.Remote) (engines.Engine, error) {
			return New(Config{URL: r.URL, API: r.API, Kind: Kind, Model: r.Model, HTTP: r.HTTP, MetricsPath: "/metrics"})
		},
	}
}

// Config describes the running server. A kind's descriptor fills the
// endpoints and hooks of its kind.
type Config struct {
	// URL is the server's root (a trailing /v1 is dropped).
	URL string
	// API is engines.APIOpenAI (default) or engines.APIOllama.
	API string
	// Kind is the server's kind ("" = Kind, any OpenAI-compatible server).
	Kind string
	// Model is the model requested.
	Model string
	HTTP  *http.Client
	// Health is the readiness path (default /v1/models).
	Health string
	// MetricsPath is the Prometheus endpoint ("" = none).
	MetricsPath string
	// Identity reads the server's identity for the model requested; nil
	// reads /v1/models and whichever of /version, /props and
	// /get_server_info answers, for the version.
	Identity func(ctx context.Context, srv *process.Server, model string) (engines.Identity, error)
	// ExpectModel is the model id the server reports for the one
	// requested (nil: the same).
	ExpectModel func(string) string
	// PickModel returns the model to request when none was given (nil:
	// the first listed by /v1/models).
	PickModel func(ctx context.Context, srv *process.Server) (string, error)
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

var (
	_ engines.Engine        = (*Engine)(nil)
	_ engines.Externaler    = (*Engine)(nil)
	_ engines.Expecter      = (*Engine)(nil)
	_ engines.MetricsSource = (*Engine)(nil)
	_ engines.ModelNamer    = (*Engine)(nil)
	_ engines.RunInfoSetter = (*Engine)(nil)
)

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
	case engines.APIOpenAI, engines.APIOllama:
	default:
		return nil, fmt.Errorf("engine API %q: want openai or ollama", cfg.API)
	}
	if cfg.Kind == "" {
		cfg.Kind = Kind
	}
	if cfg.Health == "" {
		cfg.Health = "/v1/models"
	}
	srv := process.NewServer(process.Spec{Name: cfg.Kind + " at " + cfg.URL}, cfg.URL, cfg.Health)
	srv.HTTP = cfg.HTTP
	return &Engine{cfg: cfg, srv: srv, exited: make(chan struct{})}, nil
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// Kind is the server's kind (Kind when unknown).
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

// MetricsURL is the Prometheus endpoint, "" when the kind has none.
func (e *Engine) MetricsURL() string {
	if e.cfg.MetricsPath == "" {
		return ""
	}
	return e.cfg.URL + e.cfg.MetricsPath
}

// Expect is the model id requested, as the server reports it.
func (e *Engine) Expect() engines.Identity {
	if e.cfg.ExpectModel != nil {
		return engines.Identity{Model: e.cfg.ExpectModel(e.cfg.Model)}
	}
	return engines.Identity{Model: e.cfg.Model}
}

// RequestModel is the model requests carry.
func (e *Engine) RequestModel() string { return e.cfg.Model }

// Identity reads what the server says about itself.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	var id engines.Identity
	var err error
	if e.cfg.Identity != nil {
		id, err = e.cfg.Identity(ctx, e.srv, e.cfg.Model)
	} else {
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
	var props struct { // llama.cpp
		BuildInfo string `json:"build_info"`
	}
	if raw, err := e.srv.GetJSON(ctx, "/props", &props); err == nil && props.BuildInfo != "" {
		id.EngineVersion, id.Raw["/props"] = props.BuildInfo, raw
		return id, nil
	}
	var si struct { // SGLang
		Revision string `json:"revision"`
		TPSize   int    `json:"tp_size"`
		Version  string `json:"version"`
	}
	if raw, err := e.srv.GetJSON(ctx, "/get_server_info", &si); err == nil && si.Version != "" {
		id.EngineVersion, id.Raw["/get_server_info"] = si.Version, process.RedactValue(raw)
		id.TensorParallel, id.Revision = si.TPSize, si.Revision
	}
	return id, nil
}

// ResolveModel returns the model to request when none was given: the
// kind's choice (Ollama: the first of /api/tags), else the first listed by
// /v1/models.
func (e *Engine) ResolveModel(ctx context.Context) (string, error) {
	if e.cfg.PickModel != nil {
		return e.cfg.PickModel(ctx, e.srv)
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
