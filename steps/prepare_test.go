package steps

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// sseServer answers every chat completion with one streamed token.
func sseServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
			`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
			`[DONE]`,
		} {
			io.WriteString(w, "data: "+e+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// timedPrepare is the real OpenAI client, noting when its Prepare (the
// bodies encoded, the connections opened) returned.
type timedPrepare struct {
	*openai.Client
	clock func() float64

	mu       sync.Mutex
	prepared float64
	calls, n int
}

func (c *timedPrepare) Prepare(ctx context.Context, reqs []workload.Request) func() {
	release := c.Client.Prepare(ctx, reqs)
	c.mu.Lock()
	c.prepared, c.calls, c.n = c.clock(), c.calls+1, len(reqs)
	c.mu.Unlock()
	return release
}

// The formal stage begins once the burst is prepared, and before the
// first request is sent: with the preparation inside the stage (loadgen
// prepares when it is handed the burst), formal.start came before the
// connections were open (1.13 s before the first sent_at with 1,000
// requests to llama-server). The burst is all of an unlimited stage, the
// first fill of a concurrency stage; an open mode has none.
func TestFormalStartsAfterPreparation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      func(*RequestsConfig)
		prepared int
		load     string
	}{
		{"unlimited", func(*RequestsConfig) {}, 200, `{"mode":"unlimited"}`},
		{"concurrency", func(c *RequestsConfig) { c.Mode, c.Concurrency = "concurrency", 50 }, 50, `{"mode":"concurrency","concurrency":50}`},
		{"capped", func(c *RequestsConfig) { c.MaxConcurrency = 40 }, 40, `{"mode":"concurrency","concurrency":40}`},
		{"constant", func(c *RequestsConfig) { c.Mode, c.Rate = "constant", 1e5 }, 0, `{"mode":"constant","rate":100000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sseServer(t)
			rc := newRC(t)
			cl := &timedPrepare{Client: openai.NewClient(srv.URL, openai.WithClock(rc.Clock.Now)), clock: rc.Clock.Now}
			d := &Deps{Engine: newTestEngine(srv.URL), Client: cl, Model: "m", Chat: true}
			cfg := formalConfig()
			cfg.Count = 200
			tc.set(cfg)
			if err := runRequests(context.Background(), rc, d, cfg); err != nil {
				t.Fatal(err)
			}
			run := reload(t, rc)
			checkPrepared(t, rc, cl, tc.prepared)
			if b, err := json.Marshal(run.Meta.Load); err != nil || string(b) != tc.load {
				t.Errorf("run.json load %s (%v), want %s", b, err, tc.load)
			}
		})
	}
}

// checkPrepared checks that the run's n requests succeeded, that cl
// prepared `prepared` of them (none: Prepare not called), and that the
// formal stage began after the preparation and before the first send.
func checkPrepared(t *testing.T, rc *workflow.RunContext, cl *timedPrepare, prepared int) {
	t.Helper()
	run := reload(t, rc)
	if len(run.Requests) != 200 {
		t.Fatalf("archived %d requests, want 200", len(run.Requests))
	}
	fo, ok := run.Meta.StageByName("formal")
	if !ok {
		t.Fatal("no formal stage")
	}
	first := run.Requests[0].SentAt
	for _, r := range run.Requests {
		if !r.OK {
			t.Errorf("request %s failed: %s", r.ID, r.Error)
		}
		first = min(first, r.SentAt)
	}
	cl.mu.Lock()
	at, calls, n := cl.prepared, cl.calls, cl.n
	cl.mu.Unlock()
	if want := min(prepared, 1); calls != want || n != prepared {
		t.Errorf("Prepare called %d times with %d requests, want %d with %d", calls, n, want, prepared)
	}
	if calls > 0 && fo.Start < at {
		t.Errorf("formal.start %.6f is %.1f ms before the preparation ended (%.6f): preparation inside the stage",
			fo.Start, (at-fo.Start)*1e3, at)
	}
	if fo.Start > first {
		t.Errorf("formal.start %.6f after the first sent_at %.6f", fo.Start, first)
	}
}
