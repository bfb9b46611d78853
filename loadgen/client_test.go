package loadgen_test

// Tests with the real streaming client, from outside the package.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// The engines' streaming clients are Trackers without importing loadgen.
var (
	_ loadgen.Tracker = (*openai.Client)(nil)
	_ loadgen.Tracker = (*ollama.Client)(nil)
)

// collector is a sink that fails the test if it is ever called
// concurrently.
type collector struct {
	t     *testing.T
	busy  atomic.Bool
	recs  []record.Request
	progs []loadgen.Progress
}

func (c *collector) sink(r record.Request) {
	if !c.busy.CompareAndSwap(false, true) {
		c.t.Error("sink called concurrently")
	}
	c.recs = append(c.recs, r)
	c.busy.Store(false)
}

func (c *collector) progress(p loadgen.Progress) {
	if !c.busy.CompareAndSwap(false, true) {
		c.t.Error("progress called concurrently with sink or itself")
	}
	c.progs = append(c.progs, p)
	c.busy.Store(false)
}

func (c *collector) last() loadgen.Progress { return c.progs[len(c.progs)-1] }

func requests(n int) []workload.Request {
	out := make([]workload.Request, n)
	for i := range out {
		out[i] = workload.Request{ID: fmt.Sprintf("r%03d", i), Phase: "formal", Chat: true, Prompt: "p"}
	}
	return out
}

// The OpenAI client has both optional abilities.
var (
	_ loadgen.Tracker  = (*openai.Client)(nil)
	_ loadgen.Preparer = (*openai.Client)(nil)
)

func TestUnlimitedSendsAllAtOnce(t *testing.T) {
	const n = 50
	var inflight, maxInflight atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := maxInflight.Load()
			if cur <= m || maxInflight.CompareAndSwap(m, cur) {
				break
			}
		}
		if cur == n {
			once.Do(func() { close(all) })
		}
		// Hold every request until all n are here at the same time; a
		// scheduler that sends fewer at once leaves them waiting here.
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	c := &collector{t: t}
	err := loadgen.Run(context.Background(), loadgen.Config{Mode: loadgen.Unlimited}, requests(n), openai.NewClient(srv.URL), c.sink, c.progress)
	if err != nil {
		t.Fatal(err)
	}
	if got := maxInflight.Load(); got != n {
		t.Fatalf("server saw at most %d requests at once, want %d", got, n)
	}
	if len(c.recs) != n {
		t.Fatalf("%d records", len(c.recs))
	}
	for _, r := range c.recs {
		if !r.OK || r.OutputTokens != 3 {
			t.Fatalf("%+v", r)
		}
	}
	// The server writes the three events of each response at once: where
	// the client reads receive stamps (Linux) it cannot tell them from
	// merged ones, and counts every first token as bounded.
	bounded := 0
	if runtime.GOOS == "linux" {
		bounded = n
	}
	p := c.last()
	p.BoundedFirstWithin = 0 // how long the client took to read: not this test's
	if p != (loadgen.Progress{Sent: n, Done: n, Tokens: 3 * n, BoundedFirst: bounded, BoundedChunks: bounded}) {
		t.Fatalf("progress %+v", p)
	}
}

func TestMaxDurationWithClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"partial\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := &collector{t: t}
	err := loadgen.Run(context.Background(), loadgen.Config{MaxDuration: 200 * time.Millisecond}, requests(5), openai.NewClient(srv.URL), c.sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 5 {
		t.Fatalf("%d records", len(c.recs))
	}
	for _, r := range c.recs {
		if r.OK || r.Error != "cancelled: max duration" {
			t.Fatalf("%+v", r)
		}
	}
}
