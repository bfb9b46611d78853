package steps

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/engines/openai"
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
	calls    int
}

func (c *timedPrepare) Prepare(ctx context.Context, reqs []workload.Request) func() {
	release := c.Client.Prepare(ctx, reqs)
	c.mu.Lock()
	c.prepared, c.calls = c.clock(), c.calls+1
	c.mu.Unlock()
	return release
}

// The formal stage begins once the burst is prepared, and before the
// first request is sent: with the preparation inside the stage (loadgen
// prepares when it is handed the burst), formal.start came before the
// connections were open (1.13 s before the first sent_at with 1,000
// requests to llama-server).
func TestFormalStartsAfterPreparation(t *testing.T) {
	srv := sseServer(t)
	rc := newRC(t)
	cl := &timedPrepare{Client: openai.NewClient(srv.URL, openai.WithClock(rc.Clock.Now)), clock: rc.Clock.Now}
	d := &Deps{Engine: newTestEngine(srv.URL), Client: cl, Model: "m", Chat: true}
	cfg := formalConfig()
	cfg.Count = 200
	if err := runRequests(context.Background(), rc, d, cfg); err != nil {
		t.Fatal(err)
	}
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
	prepared, calls := cl.prepared, cl.calls
	cl.mu.Unlock()
	if calls != 1 {
		t.Errorf("Prepare called %d times, want once", calls)
	}
	if fo.Start < prepared {
		t.Errorf("formal.start %.6f is %.1f ms before the preparation ended (%.6f): preparation inside the stage",
			fo.Start, (prepared-fo.Start)*1e3, prepared)
	}
	if fo.Start > first {
		t.Errorf("formal.start %.6f after the first sent_at %.6f", fo.Start, first)
	}
}
