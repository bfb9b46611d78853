package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Router is the simulated disaggregated deployment's router, an HTTP
// server on 127.0.0.1 speaking the OpenAI API, as vLLM's disaggregated
// prefill proxy does: each request goes first to the prefill engine with
// max_tokens 1 (the prompt's KV cache and first token; kv_transfer_params
// do_remote_decode), then, after the KV cache's transfer delay
// (KVPerTokenS per prompt token), to the decode engine with
// do_remote_prefill, which skips prefill and streams the answer back
// through the router. /v1/models, /version and /metrics are the decode
// engine's.
type Router struct {
	prefill, decode *Engine
	// kvPerTokenS is the transfer time of one prompt token's KV cache, at
	// speed 1.
	kvPerTokenS, speed float64
	client             *http.Client
	// logw receives the router's log lines (nil: none); logMu keeps
	// them whole.
	logw  io.Writer
	logMu sync.Mutex

	mu       sync.Mutex
	started  bool
	baseURL  string
	srv      *http.Server
	exited   chan struct{}
	exitOnce sync.Once
	exitedAt time.Time
}

var _ engines.Engine = (*Router)(nil)

// NewRouter returns the router in front of prefill and decode; the KV
// transfer takes kvPerTokenS per prompt token at speed 1, divided by
// speed. Its log lines go to log (nil: none).
func NewRouter(prefill, decode *Engine, kvPerTokenS, speed float64, log io.Writer) *Router {
	if speed <= 0 {
		speed = 1
	}
	return &Router{prefill: prefill, decode: decode, kvPerTokenS: kvPerTokenS, speed: speed,
		client: &http.Client{}, exited: make(chan struct{}), logw: log}
}

func (r *Router) log(format string, args ...any) {
	if r.logw == nil {
		return
	}
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + " " + fmt.Sprintf(format, args...) + "\n"
	r.logMu.Lock()
	_, _ = io.WriteString(r.logw, line)
	r.logMu.Unlock()
}

// Kind returns Kind: the router is the simulator's own.
func (r *Router) Kind() string { return Kind }

// Simulated returns true.
func (r *Router) Simulated() bool { return true }

// API returns "openai".
func (r *Router) API() string { return engines.APIOpenAI }

// BaseURL is http://127.0.0.1:PORT once started.
func (r *Router) BaseURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.baseURL
}

// Start binds a free port of 127.0.0.1 and serves.
func (r *Router) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("sim router: already started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sim router: listen: %w", err)
	}
	r.started = true
	r.baseURL = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	srv := r.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.log("ERROR router: %v", err)
			r.exit()
		}
	}()
	r.log("INFO router (simulated) on %s: prefill %s, decode %s", r.baseURL, r.prefill.BaseURL(), r.decode.BaseURL())
	return nil
}

// WaitReady returns once both engines are ready (the router itself is
// ready once started).
func (r *Router) WaitReady(ctx context.Context, timeout time.Duration) error {
	for _, e := range []*Engine{r.prefill, r.decode} {
		if err := e.WaitReady(ctx, timeout); err != nil {
			return err
		}
	}
	return nil
}

// Identity asks the router: the decode engine's /v1/models and /version
// through it.
func (r *Router) Identity(ctx context.Context) (engines.Identity, error) {
	base := r.BaseURL()
	if base == "" {
		return engines.Identity{}, errors.New("sim router: not started")
	}
	return identityAt(ctx, r.client, base)
}

// Stop closes the server and returns at once.
func (r *Router) Stop(context.Context, time.Duration) (time.Time, error) {
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if !started {
		return time.Time{}, errors.New("sim router: not started")
	}
	r.exit()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitedAt, nil
}

func (r *Router) exit() {
	r.exitOnce.Do(func() {
		r.mu.Lock()
		srv := r.srv
		r.mu.Unlock()
		if srv != nil {
			_ = srv.Close()
		}
		r.mu.Lock()
		r.exitedAt = time.Now()
		r.mu.Unlock()
		close(r.exited)
	})
}

// Exited is closed once the router has stopped.
func (r *Router) Exited() <-chan struct{} { return r.exited }

// Info describes the router.
func (r *Router) Info() record.EngineInfo {
	return record.EngineInfo{Kind: Kind, URL: r.BaseURL(), API: engines.APIOpenAI, Managed: true,
		Command: []string{"joulebench-sim", "router"}, Model: r.decode.cfg.Model,
		Extra: map[string]any{"simulated": true, "kv_transfer_per_token_s": r.kvPerTokenS}}
}

func (r *Router) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if r.prefill.Phase() == simtel.PhaseReady && r.decode.Phase() == simtel.PhaseReady {
			w.WriteHeader(http.StatusOK)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "prefill or decode engine not ready")
	})
	for _, path := range []string{"/version", "/v1/models", "/metrics"} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, req *http.Request) { r.forward(w, req, r.decode, nil) })
	}
	mux.HandleFunc("POST /v1/chat/completions", r.handleGenerate)
	mux.HandleFunc("POST /v1/completions", r.handleGenerate)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "no route for "+req.Method+" "+req.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set(SimulatedHeader, "true")
		mux.ServeHTTP(w, req)
	})
}

// handleGenerate is one request through the deployment: prefill, KV
// transfer, decode.
func (r *Router) handleGenerate(w http.ResponseWriter, req *http.Request) {
	var body map[string]any
	dec := json.NewDecoder(io.LimitReader(req.Body, 64<<20))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	pre := make(map[string]any, len(body)+1)
	for k, v := range body {
		pre[k] = v
	}
	delete(pre, "max_completion_tokens")
	delete(pre, "stream_options")
	pre["max_tokens"], pre["stream"] = 1, false
	pre["kv_transfer_params"] = map[string]any{"do_remote_decode": true}
	resp, err := r.post(req.Context(), r.prefill, req.URL.Path, pre)
	if err != nil {
		writeError(w, http.StatusBadGateway, "bad_gateway", "prefill engine: "+err.Error())
		return
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
	if err != nil {
		writeError(w, http.StatusBadGateway, "bad_gateway", "prefill engine: "+err.Error())
		return
	}
	if resp.StatusCode != http.StatusOK {
		copyResponse(w, resp, bytes.NewReader(raw))
		return
	}
	var usage struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &usage); err != nil {
		writeError(w, http.StatusBadGateway, "bad_gateway", "prefill engine: "+err.Error())
		return
	}
	// The KV cache of the prompt moves to the decode node.
	t := time.NewTimer(time.Duration(float64(usage.Usage.PromptTokens) * r.kvPerTokenS / r.speed * float64(time.Second)))
	select {
	case <-t.C:
	case <-req.Context().Done():
		t.Stop()
		return
	}
	body["kv_transfer_params"] = map[string]any{"do_remote_prefill": true}
	r.forward(w, req, r.decode, body)
}

// post sends body as JSON to path on engine e.
func (r *Router) post(ctx context.Context, e *Engine, path string, body map[string]any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, e.BaseURL()+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out.Header.Set("Content-Type", "application/json")
	return r.client.Do(out)
}

// forward sends the request (with body when not nil, else as a GET) to
// engine e and streams its response back.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, e *Engine, body map[string]any) {
	var resp *http.Response
	var err error
	if body != nil {
		resp, err = r.post(req.Context(), e, req.URL.Path, body)
	} else {
		var out *http.Request
		out, err = http.NewRequestWithContext(req.Context(), http.MethodGet, e.BaseURL()+req.URL.Path, nil)
		if err == nil {
			resp, err = r.client.Do(out)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, "bad_gateway", "decode engine: "+err.Error())
		return
	}
	defer resp.Body.Close()
	copyResponse(w, resp, resp.Body)
}

// copyResponse writes resp's status, content type and body, flushing
// each piece as it arrives (a stream stays a stream).
func copyResponse(w http.ResponseWriter, resp *http.Response, body io.Reader) {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
