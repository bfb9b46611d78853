package steps

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/openai"
)

// tooLong is llama-server's answer to a prompt over its context size.
const tooLong = `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`

// failingServer answers a chat completion with 400 (tooLong) when fail
// says so for its n-th request (1-based), else with one streamed token.
func failingServer(t *testing.T, fail func(n int64) bool) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if fail(n.Add(1)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, tooLong)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Warm-up failures above max_failed stop the run before the formal stage,
// with the server's first error in the step's error (the console and
// run.json's reason); below it the run goes on and the log names the
// errors with their counts. Before, a warm-up that failed entirely went on
// to 200 formal requests failing the same way.
func TestWarmupFailuresStopRun(t *testing.T) {
	cases := []struct {
		name      string
		fail      func(n int64) bool
		maxFailed float64
		stop      bool
		want      string // in the error when stop, else in the log
	}{
		{"all fail", func(int64) bool { return true }, 0.5, true,
			"warm-up: 4 of 4 requests failed (more than max_failed 0.5): the server's first error: "},
		{"one of four, max 0.5", func(n int64) bool { return n == 2 }, 0.5, false, "1 of 4 warmup requests failed: 1× "},
		{"one of four, max 0", func(n int64) bool { return n == 2 }, 0, true, "warm-up: 1 of 4 requests failed (more than max_failed 0)"},
		{"all fail, max 1", func(int64) bool { return true }, 1, false, "4 of 4 warmup requests failed: 4× "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := failingServer(t, tc.fail)
			rc := newRC(t)
			var log bytes.Buffer
			rc.Log = zerolog.New(&log)
			d := &Deps{Engine: newTestEngine(srv.URL), Client: openai.NewClient(srv.URL, openai.WithClock(rc.Clock.Now)), Model: "m", Chat: true, External: true}
			cfg := warmupKind.NewConfig().(*WarmupConfig)
			cfg.Requests, cfg.Prompt, cfg.Concurrency, cfg.MaxFailed = 4, "hi", 1, tc.maxFailed
			err := runWarmup(context.Background(), rc, d, cfg)
			if tc.stop {
				t.Logf("run stopped: %v", err)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "exceeds the available context size") {
					t.Fatalf("error %v, want %q with the server's message", err, tc.want)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(log.String(), tc.want) || !strings.Contains(log.String(), "exceeds the available context size") {
					t.Errorf("log %q, want %q with the server's message", log.String(), tc.want)
				}
			}
			// The warm-up stage ended and every request is archived.
			run := reload(t, rc)
			if ws, ok := run.Meta.StageByName("warmup"); !ok || ws.Open || len(run.Requests) != 4 {
				t.Errorf("warmup stage %+v, %d requests archived", ws, len(run.Requests))
			}
		})
	}
}

// The summary names the most frequent messages first, with their counts,
// and cuts the list after three.
func TestFailureSummary(t *testing.T) {
	var reqs []record.Request
	add := func(n int, msg string) {
		for range n {
			reqs = append(reqs, record.Request{Phase: "formal", Error: msg})
		}
	}
	add(5, "http 400: too long")
	add(2, "connection reset")
	add(2, "cancelled")
	add(1, "http 500: boom")
	reqs = append(reqs, record.Request{Phase: "formal", OK: true}, record.Request{Phase: "warmup", Error: "x"})
	// 10 formal failures of 11 formal requests; ties (2 and 2) in message
	// order: "cancelled" before "connection reset".
	want := `10 of 11 formal requests failed: 5× "http 400: too long", 2× "cancelled", 2× "connection reset", 1 other message`
	if got := failureSummary(reqs, "formal"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := failureSummary(reqs[10:11], "formal"); got != "" {
		t.Errorf("no failure: %q", got)
	}
}
