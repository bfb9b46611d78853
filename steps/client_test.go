package steps

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// The client start_engine makes once the engine is ready talks to the
// engine's URL: warm-up requests reach an OpenAI-compatible server and are
// archived with the tokens its usage reports.
func TestStartEngineThenWarmupOverHTTP(t *testing.T) {
	var chats atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		chats.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
			`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			`[DONE]`,
		} {
			io.WriteString(w, "data: "+e+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)

	rc := newRC(t)
	d := &Deps{Engine: newTestEngine(srv.URL), Model: "m", Chat: true,
		NewClient: func(u string) loadgen.Doer { return openai.NewClient(u) }}
	ctx := context.Background()
	if err := runStartEngine(ctx, rc, d, &StartEngineConfig{ReadyTimeout: workflow.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := runWarmup(ctx, rc, d, &WarmupConfig{Requests: 2, Prompt: "Hello", Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	if n := chats.Load(); n != 2 {
		t.Errorf("server saw %d chat requests, want 2", n)
	}
	run := reload(t, rc)
	if len(run.Requests) != 2 {
		t.Fatalf("archived %d requests, want 2", len(run.Requests))
	}
	for _, r := range run.Requests {
		if !r.OK || r.OutputTokens != 2 || r.TokensSource != "usage" || r.Phase != "warmup" {
			t.Errorf("request %+v: want ok, 2 tokens from usage, phase warmup", r)
		}
	}
}
