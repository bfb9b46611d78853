// Package external is an inference server joulebench did not start
// (--engine-url): an OpenAI-compatible server (vLLM, SGLang, llama-server,
// ...) or Ollama. Start and Stop do nothing; the run has no startup or
// release stage, so the lifecycle metrics are not applicable. Readiness is
// the server answering; identity is read from the endpoints its kind has
// (the kind, when given, says which), else from /v1/models.
package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/redirect"
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
			return New(Config{URL: r.URL, API: r.API, Kind: Kind, Model: r.Model, HTTP: r.HTTP, MetricsPath: "/metrics", Note: r.Note})
		},
	}
}

// Config describes the running server. A kind's descriptor fills the
// endpoints and hooks of its kind.
type Config struct {
	// URL is the server's root (a trailing /v1 is dropped). User info
	// and a query string are sent with every request and never written
	// out (Info, errors and notes show process.RedactURL of it).
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
	// Note, when set, is told how a slow readiness wait goes, every
	// NoteEvery (default 30 s).
	Note      func(string)
	NoteEvery time.Duration
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
	_ engines.ModelResolver = (*Engine)(nil)
)

// New checks the configuration.
func New(cfg Config) (*Engine, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// Not shown: what does not parse cannot be redacted.
		return nil, fmt.Errorf("engine URL: does not parse as a URL (want http://HOST:PORT or https://...)")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("engine URL %q: want http://HOST:PORT or https://HOST:PORT", process.RedactURL(cfg.URL))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("engine URL %q: port %s is not a port number (1 to 65535)", process.RedactURL(cfg.URL), p)
		}
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath, u.Fragment = "", ""
	cfg.URL = u.String()
	// The server's own queries (health, identity, /metrics) go to the
	// plain root; the user info and the query travel in the transport, so
	// that no URL they print carries them.
	plain := *u
	plain.User, plain.RawQuery = nil, ""
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
	if cfg.NoteEvery <= 0 {
		cfg.NoteEvery = 30 * time.Second
	}
	srv := process.NewServer(process.Spec{Name: cfg.Kind + " at " + plain.String()}, plain.String(), cfg.Health)
	srv.HTTP = withSecrets(cfg.HTTP, u.User, u.RawQuery)
	return &Engine{cfg: cfg, srv: srv, exited: make(chan struct{})}, nil
}

// withSecrets returns hc whose requests carry user (basic auth) and query
// (merged into each request's own), or hc itself when there are none.
func withSecrets(hc *http.Client, user *url.Userinfo, query string) *http.Client {
	if user == nil && query == "" {
		return hc
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := redirect.Guard(hc) // the transport adds the secrets to any request
	c.Transport = secrets{next: next, user: user, query: query}
	return c
}

type secrets struct {
	next  http.RoundTripper
	user  *url.Userinfo
	query string
}

func (s secrets) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if s.query != "" {
		if r.URL.RawQuery == "" {
			r.URL.RawQuery = s.query
		} else {
			r.URL.RawQuery += "&" + s.query
		}
	}
	if s.user != nil && r.Header.Get("Authorization") == "" {
		pw, _ := s.user.Password()
		r.SetBasicAuth(s.user.Username(), pw)
	}
	return s.next.RoundTrip(r)
}

// shown is the URL as it may be written out.
func (e *Engine) shown() string { return process.RedactURL(e.cfg.URL) }

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
// Ollama, also that it has the model). A server that is not there fails
// at once: the connection refused, or a host name that does not resolve
// (the server is said to run already). A server that answers with an
// error or not in time (still loading) is waited for, with a Note every
// NoteEvery saying for how long and its last answer.
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	health := process.RedactURL(e.srv.HealthURL())
	start := time.Now()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	note := time.NewTicker(e.cfg.NoteEvery)
	defer note.Stop()
	var last error
	for {
		last = process.Probe(ctx, e.srv.Client(), e.srv.HealthURL())
		if last == nil {
			return nil
		}
		if why := notThere(last); why != "" {
			return fmt.Errorf("%s at %s: %s: GET %s: %w", e.cfg.Kind, e.shown(), why, health, last)
		}
		if process.CredentialsRefused(last) {
			return fmt.Errorf("%s at %s: GET %s: %w: %s", e.cfg.Kind, e.shown(), health, last, process.CredentialsHint)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not answering after %s: GET %s: last answer: %w", e.cfg.Kind, timeout, health, last)
		case now := <-note.C:
			if e.cfg.Note != nil {
				e.cfg.Note(fmt.Sprintf("waiting for %s at %s to answer GET %s: %s so far, last answer: %v",
					e.cfg.Kind, e.shown(), health, now.Sub(start).Round(time.Second), last))
			}
		case <-t.C:
		}
	}
}

// notThere says why err means that no server is there at all ("" when
// the server may still come: a timeout, an error status).
func notThere(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there (is the server running, is the URL right?)"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "host not found"
	}
	return ""
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
	u, err := url.Parse(e.cfg.URL)
	if err != nil {
		return e.cfg.URL + e.cfg.MetricsPath
	}
	u.Path += e.cfg.MetricsPath
	return u.String()
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
	id := engines.Identity{Model: m.ID, ContextLength: m.MaxModelLen, Raw: map[string]any{"/v1/models": raw},
		Precision: engines.LocalModelPrecision(m.Root)}
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
// /v1/models. It waits as WaitReady does, until ctx ends: a server that
// answers with an error status or not in time (still loading: 503) is
// asked again, with a Note every NoteEvery; a server that is not there
// (the connection refused, a host name that does not resolve) fails at
// once, the error leading with that; so does one that answers but lists
// no model.
func (e *Engine) ResolveModel(ctx context.Context) (string, error) {
	start := time.Now()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	note := time.NewTicker(e.cfg.NoteEvery)
	defer note.Stop()
	for {
		m, err := e.pickModel(ctx)
		if err == nil {
			return m, nil
		}
		if why := notThere(err); why != "" {
			return "", fmt.Errorf("%s: %w", why, err) // the caller names the URL
		}
		if process.CredentialsRefused(err) {
			return "", fmt.Errorf("%s: %w", process.CredentialsHint, err)
		}
		if !mayCome(ctx, err) {
			return "", fmt.Errorf("no --model given and the server does not list one: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no --model given, and the server did not list its models within %s: last answer: %w",
				time.Since(start).Round(time.Second), err)
		case now := <-note.C:
			if e.cfg.Note != nil {
				e.cfg.Note(fmt.Sprintf("waiting for %s at %s to list its models: %s so far, last answer: %v",
					e.cfg.Kind, e.shown(), now.Sub(start).Round(time.Second), err))
			}
		case <-t.C:
		}
	}
}

func (e *Engine) pickModel(ctx context.Context) (string, error) {
	if e.cfg.PickModel != nil {
		return e.cfg.PickModel(ctx, e.srv)
	}
	m, _, err := v1models.List(ctx, e.srv, "")
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// mayCome reports whether err is an answer a loading server gives (an
// error status, no answer in time, a connection cut), so that asking
// again may succeed; not when ctx itself ended.
func mayCome(ctx context.Context, err error) bool {
	var st *process.StatusError
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return true // the caller's select says why
	case errors.As(err, &st):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return false
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
func (e *Engine) Info() record.EngineInfo {
	info := record.EngineInfo{
		Kind:    e.cfg.Kind,
		URL:     e.shown(),
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
		e.id.Precision.Record(&info)
	}
	e.mu.Unlock()
	return info
}
