// Package sim is joulebench's built-in simulated inference engine: a real
// HTTP server on 127.0.0.1 speaking the OpenAI API (streaming and not),
// with continuous batching, a slot limit and a waiting queue, prefill cost
// proportional to prompt length, decode steps that slow with batch size, a
// model-load delay before it is ready and a stopping delay before it exits.
// Everything it serves is labelled simulated (X-Joulebench-Simulated: true,
// a model id containing "sim").
//
// It implements engines.Engine for the executor and telemetry/sim.Load so
// that simulated GPUs draw power according to its activity.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// ErrCrashed is the exit error of an engine that exited on its own (Crash
// or Config.CrashAfterRequests).
var ErrCrashed = errors.New("sim: engine crashed (simulated fault)")

// Engine is the simulated engine. Create it with New; it runs once
// (Start, then Stop) like an engine process.
type Engine struct {
	cfg   Config
	logMu sync.Mutex

	mu        sync.Mutex
	phase     string
	started   bool
	stopping  bool
	startedAt time.Time
	loadDur   time.Duration
	baseURL   string
	srv       *http.Server
	exitedAt  time.Time
	exitErr   error

	sched    *scheduler
	cache    *prefixCache // nil unless cfg.PrefixCache
	ready    chan struct{}
	exited   chan struct{}
	exitOnce sync.Once
	client   *http.Client
	reqN     uint64 // guarded by mu
	// gpu is the simulated GPU that follows this engine (GPUConfig).
	gpu simtel.Config
}

var (
	_ engines.Engine = (*Engine)(nil)
	_ simtel.Load    = (*Engine)(nil)
)

// New returns a simulated engine; zero fields of cfg that cannot be zero
// take their DefaultConfig values (start from DefaultConfig to change a few).
func New(cfg Config) *Engine {
	cfg = cfg.normalize()
	e := &Engine{
		cfg:    cfg,
		phase:  simtel.PhaseOff,
		ready:  make(chan struct{}),
		exited: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second},
		gpu:    simtel.DefaultConfig(),
	}
	e.gpu.Seed = cfg.Seed
	e.sched = newScheduler(cfg, func() { e.exit(ErrCrashed) })
	if cfg.PrefixCache {
		e.cache = newPrefixCache(cfg.KVCacheTokens)
	}
	return e
}

// Config returns the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// Kind returns Kind.
func (e *Engine) Kind() string { return Kind }

// Simulated returns true.
func (e *Engine) Simulated() bool { return true }

// API returns "openai".
func (e *Engine) API() string { return engines.APIOpenAI }

// BaseURL is http://127.0.0.1:PORT once started.
// DefaultFamilies are the /metrics families a run keeps by default.
func DefaultFamilies() []string {
	return []string{"sim:num_requests_running", "sim:num_requests_waiting", "sim:kv_cache_usage_perc"}
}

// Kind is the engine kind.
const Kind = "sim"

var (
	_ engines.Engine        = (*Engine)(nil)
	_ engines.MetricsSource = (*Engine)(nil)
	_ engines.ModelNamer    = (*Engine)(nil)
)

// RequestModel is the model id the simulator serves.
func (e *Engine) RequestModel() string { return e.cfg.Model }

// MetricsURL is the simulator's Prometheus endpoint (the side path).
func (e *Engine) MetricsURL() string {
	if u := e.BaseURL(); u != "" {
		return u + "/metrics"
	}
	return ""
}

func (e *Engine) BaseURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.baseURL
}

// Exited is closed when the engine has exited.
func (e *Engine) Exited() <-chan struct{} { return e.exited }

// ExitErr is nil after a Stop, ErrCrashed after a simulated crash.
func (e *Engine) ExitErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exitErr
}

func (e *Engine) logf(format string, args ...any) {
	if e.cfg.Log == nil {
		return
	}
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + " " + fmt.Sprintf(format, args...) + "\n"
	e.logMu.Lock()
	_, _ = io.WriteString(e.cfg.Log, line)
	e.logMu.Unlock()
}

func (e *Engine) dur(s float64) time.Duration {
	return time.Duration(s / e.cfg.Speed * float64(time.Second))
}

// Start binds 127.0.0.1 (Config.Port, 0 = any free port; Config.Listen
// instead when set), serves HTTP and
// begins the model load; it returns at once. The engine runs once: a
// second Start fails.
func (e *Engine) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("sim: engine already started")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(e.cfg.Port))
	if e.cfg.Listen != "" {
		addr = e.cfg.Listen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: listen: %w", err)
	}
	e.started = true
	e.startedAt = time.Now()
	e.loadDur = e.dur(e.cfg.StartupS)
	e.phase = simtel.PhaseLoading
	e.baseURL = "http://" + ln.Addr().String()
	e.srv = &http.Server{Handler: e.handler(), ReadHeaderTimeout: 10 * time.Second}
	srv := e.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logf("ERROR server: %v", err)
			e.exit(fmt.Errorf("sim: server: %w", err))
		}
	}()
	go e.sched.run()
	go e.load()
	e.logf("INFO starting %s (simulated) on %s: model %s, %d slots, speed %g, load %.3fs",
		e.cfg.Version, e.baseURL, e.cfg.Model, e.cfg.Slots, e.cfg.Speed, e.loadDur.Seconds())
	return nil
}

// load is the model-load delay.
func (e *Engine) load() {
	t := time.NewTimer(e.loadDur)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.exited:
		return
	}
	e.mu.Lock()
	if e.phase == simtel.PhaseLoading {
		e.phase = simtel.PhaseReady
		close(e.ready)
		e.mu.Unlock()
		e.logf("INFO model loaded, ready")
		return
	}
	e.mu.Unlock()
}

// WaitReady blocks until the model is loaded, the engine exits, ctx is done
// or timeout (> 0) passes.
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	e.mu.Lock()
	started := e.started
	e.mu.Unlock()
	if !started {
		return errors.New("sim: engine not started")
	}
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-e.ready:
		return nil
	case <-e.exited:
		return errors.New("sim: engine exited before it was ready")
	case <-tc:
		return fmt.Errorf("sim: engine not ready after %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Identity asks the running server: GET /v1/models and GET /version.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	base := e.BaseURL()
	if base == "" {
		return engines.Identity{}, errors.New("sim: engine not started")
	}
	return identityAt(ctx, e.client, base)
}

// identityAt asks the simulator's server at base (an engine, or the
// router in front of two): GET /v1/models and GET /version.
func identityAt(ctx context.Context, client *http.Client, base string) (engines.Identity, error) {
	var models struct {
		Data []struct {
			ID             string `json:"id"`
			MaxModelLen    int    `json:"max_model_len"`
			Revision       string `json:"revision"`
			TensorParallel int    `json:"tensor_parallel_size"`
		} `json:"data"`
	}
	var rawModels, rawVersion map[string]any
	if err := getJSON(ctx, client, base+"/v1/models", &models, &rawModels); err != nil {
		return engines.Identity{}, err
	}
	var version struct {
		Version string `json:"version"`
	}
	if err := getJSON(ctx, client, base+"/version", &version, &rawVersion); err != nil {
		return engines.Identity{}, err
	}
	if len(models.Data) == 0 {
		return engines.Identity{}, errors.New("sim: /v1/models lists no model")
	}
	m := models.Data[0]
	return engines.Identity{
		Model:          m.ID,
		Revision:       m.Revision,
		EngineVersion:  version.Version,
		ContextLength:  m.MaxModelLen,
		TensorParallel: m.TensorParallel,
		Raw:            map[string]any{"/v1/models": rawModels, "/version": rawVersion},
	}, nil
}

func getJSON(ctx context.Context, client *http.Client, url string, v any, raw *map[string]any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("sim: identity: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("sim: identity: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sim: identity: GET %s: status %d", url, resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("sim: identity: GET %s: %w", url, err)
	}
	return json.Unmarshal(body, raw)
}

// Stop aborts requests in flight, refuses new ones (503), waits the
// stopping delay (cut short at grace when grace > 0, or when ctx is done:
// a forced kill), closes the server and returns the exit time. Stopping an
// engine that already exited returns its exit time.
func (e *Engine) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	e.mu.Lock()
	if !e.started {
		e.mu.Unlock()
		return time.Time{}, errors.New("sim: engine not started")
	}
	if e.stopping {
		e.mu.Unlock()
		select {
		case <-e.exited:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
		return e.exitTime(), nil
	}
	e.stopping = true
	select {
	case <-e.exited:
		e.mu.Unlock()
		return e.exitTime(), nil
	default:
	}
	e.phase = simtel.PhaseStopping
	e.mu.Unlock()
	e.logf("INFO stopping (grace %s)", grace)
	e.sched.shutdown(true)

	delay := e.dur(e.cfg.StoppingS)
	killed := false
	if grace > 0 && grace < delay {
		delay, killed = grace, true
	}
	t := time.NewTimer(delay)
	select {
	case <-t.C:
	case <-ctx.Done():
		killed = true
	case <-e.exited:
	}
	t.Stop()
	if killed {
		e.logf("WARN stopping delay cut short: killed")
	}
	e.exit(nil)
	return e.exitTime(), nil
}

// Crash makes the engine exit at once, as if its process died: requests in
// flight are cut, the server closes and Exited is closed.
func (e *Engine) Crash() { e.exit(ErrCrashed) }

func (e *Engine) exitTime() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exitedAt
}

// exit stops the scheduler and the server and records the exit, once.
func (e *Engine) exit(err error) {
	e.exitOnce.Do(func() {
		e.mu.Lock()
		started, srv := e.started, e.srv
		e.mu.Unlock()
		e.sched.shutdown(started)
		if srv != nil {
			_ = srv.Close()
		}
		e.mu.Lock()
		e.phase = simtel.PhaseOff
		e.exitedAt = time.Now()
		e.exitErr = err
		e.mu.Unlock()
		st := e.sched.snapshot()
		summary := fmt.Sprintf("%d requests finished, %d tokens generated, %d abandoned by their client",
			st.finished, st.genTotal, st.aborted)
		if err != nil {
			e.logf("ERROR exited: %s: %v", summary, err)
		} else {
			e.logf("INFO exited: %s", summary)
		}
		close(e.exited)
	})
}

// Activity reports the engine's load for the simulated GPUs.
func (e *Engine) Activity() simtel.Activity {
	e.mu.Lock()
	phase, startedAt, loadDur := e.phase, e.startedAt, e.loadDur
	e.mu.Unlock()
	a := simtel.Activity{Phase: phase, Slots: e.cfg.Slots}
	switch phase {
	case simtel.PhaseLoading:
		f := 1.0
		if loadDur > 0 {
			f = min(1, float64(time.Since(startedAt))/float64(loadDur))
		}
		a.MemFrac = e.cfg.MemFrac * f
	case simtel.PhaseReady, simtel.PhaseStopping:
		a.MemFrac = e.cfg.MemFrac
		if phase == simtel.PhaseReady {
			st := e.sched.snapshot()
			a.Running, a.Prefilling = st.decoding, st.prefilling
			if e.cfg.HW != nil {
				a.HW, a.HWEnergyJ, a.HWBusyS = true, st.hw.energyJ, st.hw.busyS
				a.ClockMHz, a.PowerCapped = st.hw.clockMHz, st.hw.capped
			}
		}
	}
	return a
}

// Phase returns "off", "loading", "ready" or "stopping".
func (e *Engine) Phase() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.phase
}

// Info describes the engine for run.json.
func (e *Engine) Info() record.EngineInfo {
	c := e.cfg
	info := record.EngineInfo{
		Kind:           Kind,
		Version:        c.Version,
		URL:            e.BaseURL(),
		API:            engines.APIOpenAI,
		Managed:        true,
		Command:        []string{"joulebench-sim"},
		Model:          c.Model,
		ServedModel:    c.Model,
		Revision:       c.Revision,
		Precision:      "bf16",
		ContextLength:  c.MaxModelLen,
		TensorParallel: c.TensorParallel,
		// The simulator has no reasoning mode: its setting is the
		// engine's default, recorded as every engine's is.
		Thinking: "default",
		Extra: map[string]any{
			"simulated":         true,
			"slots":             c.Slots,
			"speed":             c.Speed,
			"seed":              c.Seed,
			"startup_s":         c.StartupS,
			"stopping_s":        c.StoppingS,
			"step_base_s":       c.StepBaseS,
			"step_per_seq_s":    c.StepPerSeqS,
			"prefill_tok_per_s": c.PrefillTokPerS,
			"drift_per_request": c.DriftPerRequest,
		},
	}
	c.hwExtra(info.Extra)
	return info
}
