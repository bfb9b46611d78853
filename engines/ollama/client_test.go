package ollama_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/workload"
)

// streamLines serves the lines of a recorded NDJSON stream with a pause
// between them and keeps the request body.
func streamLines(t *testing.T, file string, pause time.Duration, got *map[string]any, mu *sync.Mutex) *httptest.Server {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		*got = map[string]any{"path": r.URL.Path}
		_ = json.Unmarshal(b, got)
		(*got)["path"] = r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			_, _ = w.Write(append(sc.Bytes(), '\n'))
			w.(http.Flusher).Flush()
			time.Sleep(pause)
		}
	}))
}

// /api/chat: times per line, eval_count as the token count, the six
// timing fields kept; the request carries num_predict, temperature and the
// client's options.
func TestChatStream(t *testing.T) {
	var body map[string]any
	var mu sync.Mutex
	ts := streamLines(t, "testdata/chat-stream.ndjson", 5*time.Millisecond, &body, &mu)
	defer ts.Close()
	c := ollama.NewClient(ts.URL, ollama.WithOptions(map[string]any{"seed": 1, "num_ctx": 2048}), ollama.WithThink(false))
	rec := c.Do(context.Background(), workload.Request{ID: "r1", Phase: "formal", PromptID: "p", Model: "tiny", Chat: true, MaxTokens: 4, Temperature: 0.5,
		Messages: []workload.Message{{Role: "user", Content: "Hello"}}})
	if !rec.OK || rec.Error != "" {
		t.Fatalf("record %+v", rec)
	}
	if rec.OutputTokens != 4 || rec.PromptTokens != 28 || rec.TokensSource != "engine" || rec.OutputChars != len(" engineG then right") {
		t.Errorf("tokens %d prompt %d source %s chars %d", rec.OutputTokens, rec.PromptTokens, rec.TokensSource, rec.OutputChars)
	}
	if len(rec.TokenTimes) != 4 || rec.FirstTokenAt != rec.TokenTimes[0] || !(rec.SentAt <= rec.FirstTokenAt && rec.FirstTokenAt < rec.DoneAt) {
		t.Errorf("times sent %v first %v done %v tokens %v", rec.SentAt, rec.FirstTokenAt, rec.DoneAt, rec.TokenTimes)
	}
	want := map[string]float64{"eval_count": 4, "eval_duration": 27411044, "prompt_eval_count": 28, "prompt_eval_duration": 16066426, "load_duration": 2784445, "total_duration": 48039636}
	for k, v := range want {
		if rec.EngineTimings[k] != v {
			t.Errorf("%s = %v, want %v", k, rec.EngineTimings[k], v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	opts, _ := body["options"].(map[string]any)
	if body["path"] != "/api/chat" || body["model"] != "tiny" || body["stream"] != true || body["think"] != false ||
		opts["num_predict"] != 4.0 || opts["temperature"] != 0.5 || opts["seed"] != 1.0 || opts["num_ctx"] != 2048.0 {
		t.Errorf("request body %v", body)
	}
	if msgs, _ := body["messages"].([]any); len(msgs) != 1 {
		t.Errorf("messages %v", body["messages"])
	}
}

func TestGenerateStream(t *testing.T) {
	var body map[string]any
	var mu sync.Mutex
	ts := streamLines(t, "testdata/generate-stream.ndjson", 0, &body, &mu)
	defer ts.Close()
	rec := ollama.NewClient(ts.URL+"/v1").Do(context.Background(), workload.Request{ID: "g", Model: "tiny", Prompt: "Hello", MaxTokens: 3})
	if !rec.OK || rec.OutputTokens != 3 || rec.TokensSource != "engine" {
		t.Fatalf("record %+v", rec)
	}
	mu.Lock()
	defer mu.Unlock()
	if body["path"] != "/api/generate" || body["prompt"] != "Hello" {
		t.Errorf("body %v", body)
	}
}

// Reasoning text (thinking) counts as output and marks the first token.
func TestThinkingCounts(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":"Hi"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":2,"eval_duration":1000}`+"\n")
	}))
	defer ts.Close()
	rec := ollama.NewClient(ts.URL).Do(context.Background(), workload.Request{ID: "t", Model: "m", Chat: true, Prompt: "x"})
	if !rec.OK || rec.OutputChars != 5 || len(rec.TokenTimes) != 2 || rec.OutputTokens != 2 {
		t.Errorf("record %+v", rec)
	}
}

func TestFailures(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
		chars   int
	}{
		{"missing model", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":"model \"nope\" not found, try pulling it first"}`)
		}, `http 404: model "nope" not found, try pulling it first`, 0},
		{"error line", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"message":{"content":"ab"},"done":false}`+"\n"+`{"error":"runner crashed"}`+"\n")
		}, "runner crashed", 2},
		{"cut", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"message":{"content":"abc"},"done":false}`+"\n")
		}, "stream ended before a line with done: true", 3},
		{"empty", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"message":{"content":""},"done":true,"eval_count":0}`+"\n")
		}, "empty response", 0},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>\n") }, "bad stream line", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(c.handler)
			defer ts.Close()
			rec := ollama.NewClient(ts.URL).Do(context.Background(), workload.Request{ID: "x", Model: "nope", Chat: true, Prompt: "hi"})
			if rec.OK || !strings.Contains(rec.Error, c.want) || rec.OutputChars != c.chars || rec.DoneAt < rec.SentAt {
				t.Errorf("record %+v, want error %q", rec, c.want)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"message":{"content":"a"},"done":false}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	rec := ollama.NewClient(ts.URL).Do(ctx, workload.Request{ID: "c", Model: "m", Chat: true, Prompt: "x"})
	if rec.OK || rec.Error != "cancelled" || rec.FirstTokenAt == 0 {
		t.Errorf("record %+v", rec)
	}
	rec = ollama.NewClient(ts.URL, ollama.WithRequestTimeout(100*time.Millisecond)).Do(context.Background(), workload.Request{ID: "c", Model: "m", Chat: true, Prompt: "x"})
	if rec.OK || !strings.Contains(rec.Error, "request timeout after 100ms") {
		t.Errorf("record %+v", rec)
	}
}
