package all_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/workload"
)

// TestClientsByAPI: the client of each API carries the run's settings to
// the server: the API key as a bearer token, the run id in X-Request-Id
// (OpenAI), the thinking setting (chat_template_kwargs or think), and
// Ollama's per-request seed and context length.
func TestClientsByAPI(t *testing.T) {
	type seen struct {
		path, auth, id string
		body           map[string]any
	}
	var mu sync.Mutex
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Request-Id"), body}
		mu.Unlock()
		if r.URL.Path == "/api/chat" {
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, `{"message":{"content":"hi"},"done":false}`+"\n"+`{"done":true,"eval_count":1}`+"\n")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	off := false
	cfg := engines.ClientConfig{BaseURL: srv.URL, Clock: func() float64 { return 1 }, HTTP: srv.Client(),
		APIKey: "sk-1", RunID: "run7", Seed: 42, MaxModelLen: 2048, Think: &off}
	for _, tc := range []struct {
		api, path, id string
		check         func(map[string]any) bool
	}{
		{engines.APIOpenAI, "/v1/chat/completions", "run7-r1", func(b map[string]any) bool {
			k, _ := b["chat_template_kwargs"].(map[string]any)
			return k["enable_thinking"] == false
		}},
		{engines.APIOllama, "/api/chat", "", func(b map[string]any) bool {
			o, _ := b["options"].(map[string]any)
			return b["think"] == false && o["seed"] == 42.0 && o["num_ctx"] == 2048.0
		}},
	} {
		newClient, ok := all.Clients()[tc.api]
		if !ok {
			t.Fatalf("no client for API %q", tc.api)
		}
		rec := newClient(cfg).Do(context.Background(), workload.Request{ID: "r1", Model: "m", Chat: true, Prompt: "hi"})
		if !rec.OK {
			t.Fatalf("%s: %s", tc.api, rec.Error)
		}
		mu.Lock()
		g := got
		mu.Unlock()
		if g.path != tc.path || g.auth != "Bearer sk-1" || g.id != tc.id || !tc.check(g.body) {
			t.Errorf("%s: the server saw %s, authorization %q, X-Request-Id %q, body %v", tc.api, g.path, g.auth, g.id, g.body)
		}
	}
	if n := len(all.Clients()); n != 2 {
		t.Errorf("%d client APIs, want openai and ollama", n)
	}
}

// TestClientsShareLimits: the limits are the streaming core's, so every
// API's client cuts a stream that stops, and a server that never answers,
// the same way, under the flight's limits.
func TestClientsShareLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body: the server notices the client going away (and
		// ends r's context) only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Query().Get("silent") == "" {
			w.Header().Set("Content-Type", "text/event-stream")
			if r.URL.Path == "/api/chat" {
				w.Header().Set("Content-Type", "application/x-ndjson")
			}
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "\n")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	for _, api := range []string{engines.APIOpenAI, engines.APIOllama} {
		for _, tc := range []struct {
			query  string
			limits workload.Limits
			want   string
		}{
			{"", workload.Limits{Stall: 50 * time.Millisecond}, "stall timeout: no data for 50ms"},
			{"?silent=1", workload.Limits{Timeout: 50 * time.Millisecond}, "request timeout after 50ms"},
		} {
			c := all.Clients()[api](engines.ClientConfig{BaseURL: srv.URL + tc.query, Clock: func() float64 { return 1 }, HTTP: srv.Client()})
			tr, ok := c.(interface {
				DoFlight(context.Context, workload.Request, *workload.Flight) record.Request
			})
			if !ok {
				t.Fatalf("%s: %T cannot take a flight's limits", api, c)
			}
			rec := tr.DoFlight(context.Background(), workload.Request{ID: "r", Model: "m", Chat: true, Prompt: "hi"}, &workload.Flight{Limits: tc.limits})
			if rec.OK || rec.Error != tc.want {
				t.Errorf("%s %s: ok %v, error %q; want %q", api, tc.query, rec.OK, rec.Error, tc.want)
			}
		}
	}
}
