package steps

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// oneTokenThenPause streams one token, pauses for pause (or until the
// client gives up), then finishes.
func oneTokenThenPause(t *testing.T, pause time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(pause): // the server's pace, not a synchronisation
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The profile's timeout and stall_timeout reach the client through the
// requests and warmup steps: unset, a paused stream completes; set, it is
// cut with the limit as its reason and carries no tokens.
func TestStepLimitsChangeBehaviour(t *testing.T) {
	srv := oneTokenThenPause(t, 300*time.Millisecond)
	ms := workflow.Duration(time.Millisecond)
	for _, tc := range []struct {
		name           string
		timeout, stall workflow.Duration
		want           string // "" = ok
	}{
		{"no limits", 0, 0, ""},
		{"timeout", 40 * ms, 0, "request timeout after 40ms"},
		{"stall_timeout", 0, 40 * ms, "stall timeout: no data for 40ms"},
	} {
		for _, step := range []string{"requests", "warmup"} {
			t.Run(tc.name+"/"+step, func(t *testing.T) {
				rc := newRC(t)
				// External: a failed request does not wait for a crash to show.
				d := &Deps{Engine: newTestEngine(srv.URL), Client: openai.NewClient(srv.URL, openai.WithClock(rc.Clock.Now)), Model: "m", Chat: true, External: true}
				var err error
				if step == "requests" {
					cfg := formalConfig()
					cfg.Count, cfg.Timeout, cfg.StallTimeout = 1, tc.timeout, tc.stall
					err = runRequests(context.Background(), rc, d, cfg)
				} else {
					// max_failed 1: the cut request is what is tested, not the stop.
					err = runWarmup(context.Background(), rc, d, &WarmupConfig{Requests: 1, Prompt: "hi", Timeout: tc.timeout, StallTimeout: tc.stall, MaxFailed: 1})
				}
				if err != nil {
					t.Fatal(err)
				}
				run := reload(t, rc)
				if len(run.Requests) != 1 {
					t.Fatalf("%d requests", len(run.Requests))
				}
				r := run.Requests[0]
				if tc.want == "" {
					if !r.OK || r.OutputTokens != 1 {
						t.Fatalf("%+v", r)
					}
					return
				}
				// The stall clock starts with the first bytes: those are kept.
				if r.OK || r.Error != tc.want || r.OutputTokens != 0 || tc.stall > 0 && r.OutputChars != 4 {
					t.Fatalf("got %+v, want failed with %q", r, tc.want)
				}
			})
		}
	}
}

// signalWriter collects log lines and closes seen at the first line that
// contains marker.
type signalWriter struct {
	marker string
	seen   chan struct{}
	mu     sync.Mutex
	lines  []string
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.lines = append(w.lines, string(p))
	w.mu.Unlock()
	if strings.Contains(string(p), w.marker) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// While a request hangs, the step logs what it waits on every wait_log:
// the server holds the stream until that line was written.
func TestStepLogsWhatItWaitsOn(t *testing.T) {
	lw := &signalWriter{marker: "waiting on requests in flight", seen: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-lw.seen:
		case <-time.After(10 * time.Second): // the test fails below
		}
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	rc := newRC(t)
	rc.Log = zerolog.New(lw)
	d := &Deps{Engine: newTestEngine(srv.URL), Client: openai.NewClient(srv.URL, openai.WithClock(rc.Clock.Now)), Model: "m", Chat: true}
	cfg := formalConfig()
	cfg.Count, cfg.WaitLog = 1, workflow.Duration(10*time.Millisecond)
	if err := runRequests(context.Background(), rc, d, cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lw.seen:
	default:
		t.Fatal("no line about what the run waits on")
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var line string
	for _, l := range lw.lines {
		if strings.Contains(l, lw.marker) {
			line = l
			break
		}
	}
	for _, want := range []string{`"stage":"formal"`, `"in_flight":1`, `"oldest":"formal-00000"`, `"oldest_tokens":1`, `"tokens_in_flight":1`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
}

func TestLimitsValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *RequestsConfig)
		want string
	}{
		{"defaults", func(*RequestsConfig) {}, ""},
		{"negative timeout", func(c *RequestsConfig) { c.Timeout = -1 }, "timeout and stall_timeout must not be negative"},
		{"negative stall", func(c *RequestsConfig) { c.StallTimeout = -1 }, "timeout and stall_timeout must not be negative"},
		{"wait_log above 30s", func(c *RequestsConfig) { c.WaitLog = workflow.Duration(31 * time.Second) }, "wait_log must be in [0, 30s] (0: 30s), got 31s"},
		{"wait_log zero is 30s", func(c *RequestsConfig) { c.WaitLog = 0 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := requestsKind.NewConfig().(*RequestsConfig)
			tc.mod(c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

var _ loadgen.Tracker = (*openai.Client)(nil)
