package steps

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// testEngine is a managed engine whose every answer the test sets, and
// which records how it was driven.
type testEngine struct {
	url      string
	startErr error
	readyErr error
	id       engines.Identity
	idErr    error

	mu           sync.Mutex
	started      bool
	readyTimeout time.Duration
	stopGrace    time.Duration
	stops        int
	exited       chan struct{}
	exitOnce     sync.Once
}

var _ engines.Engine = (*testEngine)(nil)

func newTestEngine(url string) *testEngine {
	return &testEngine{url: url, exited: make(chan struct{})}
}

func (e *testEngine) Kind() string    { return "test" }
func (e *testEngine) Simulated() bool { return false }
func (e *testEngine) Start(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = true
	return e.startErr
}
func (e *testEngine) WaitReady(_ context.Context, timeout time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.readyTimeout = timeout
	return e.readyErr
}
func (e *testEngine) Identity(context.Context) (engines.Identity, error) { return e.id, e.idErr }
func (e *testEngine) BaseURL() string                                    { return e.url }
func (e *testEngine) API() string                                        { return engines.APIOpenAI }
func (e *testEngine) Stop(_ context.Context, grace time.Duration) (time.Time, error) {
	e.mu.Lock()
	e.stopGrace = grace
	e.stops++
	e.mu.Unlock()
	e.exit()
	return time.Now(), nil
}
func (e *testEngine) Exited() <-chan struct{} { return e.exited }
func (e *testEngine) Info() record.EngineInfo {
	return record.EngineInfo{Kind: "test", Model: "m"}
}

// exit makes the engine exit on its own.
func (e *testEngine) exit() { e.exitOnce.Do(func() { close(e.exited) }) }

// testSource is one GPU whose power the test sets per read.
type testSource struct {
	mu    sync.Mutex
	reads int
	// power returns the watts of read n (1-based); nil: 100 W.
	power func(n int) float64
	mem   int64
	fail  error
}

var _ telemetry.Source = (*testSource)(nil)

func (s *testSource) Name() string { return "test" }
func (s *testSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "gpu0", Name: "Test GPU", Method: "power"}}, nil
}
func (s *testSource) Read(context.Context) ([]telemetry.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	s.reads++
	w := 100.0
	if s.power != nil {
		w = s.power(s.reads)
	}
	return []telemetry.Reading{{Device: "gpu0", PowerW: w, MemUsedBytes: s.mem}}, nil
}
func (s *testSource) Close() error { return nil }

func (s *testSource) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// testClient answers every request at once with tokens output tokens, and
// records what it was sent. onDo, when set, runs first (and may fail the
// request by returning false).
type testClient struct {
	clock  func() float64
	tokens int
	onDo   func(r openai.Request) bool

	mu  sync.Mutex
	got []openai.Request
}

var _ loadgen.Doer = (*testClient)(nil)

func (c *testClient) Do(_ context.Context, r openai.Request) record.Request {
	ok := true
	if c.onDo != nil {
		ok = c.onDo(r)
	}
	c.mu.Lock()
	c.got = append(c.got, r)
	c.mu.Unlock()
	now := c.clock()
	rec := record.Request{ID: r.ID, Phase: r.Phase, PromptID: r.PromptID, SentAt: now, OK: ok}
	if ok {
		rec.FirstTokenAt, rec.DoneAt, rec.OutputTokens = now+0.001, now+0.002, c.tokens
	} else {
		rec.Error = "connection reset"
	}
	return rec
}

func (c *testClient) sent() []openai.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]openai.Request(nil), c.got...)
}

// reload flushes the archive and reads it back as analyze would.
func reload(t *testing.T, rc *workflow.RunContext) *record.Run {
	t.Helper()
	if err := rc.Out.Flush(); err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(rc.Out.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func eventNames(m record.Meta) map[string]bool {
	out := map[string]bool{}
	for _, e := range m.Events {
		out[e.Name] = true
	}
	return out
}

func stageNames(m record.Meta) []string {
	var out []string
	for _, s := range m.Stages {
		out = append(out, s.Name)
	}
	return out
}

var errBoom = errors.New("boom")
