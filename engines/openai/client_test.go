package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// newServer starts a test server on 127.0.0.1 (httptest's default) that is
// closed when the test ends.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// send writes SSE events, flushing after each.
func send(w http.ResponseWriter, events ...string) {
	for _, e := range events {
		io.WriteString(w, "data: "+e+"\n\n")
	}
	w.(http.Flusher).Flush()
}

func streamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func content(s string) string {
	b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}, "finish_reason": nil}}, "usage": nil})
	return string(b)
}

const (
	roleChunk   = `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	finishChunk = `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func usageChunk(prompt, completion int) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
	return string(b)
}

func do(t *testing.T, url string, r Request, opts ...Option) record.Request {
	t.Helper()
	c := NewClient(url, opts...)
	return c.Do(context.Background(), r)
}

func TestTTFTIsFirstContentNotRole(t *testing.T) {
	const wait = 150 * time.Millisecond
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, roleChunk)
		time.Sleep(wait)
		send(w, content("Hel"))
		send(w, content("lo"), finishChunk, usageChunk(5, 2), "[DONE]")
	})
	rec := do(t, srv.URL, Request{ID: "r1", Phase: "formal", PromptID: "p", Chat: true, Prompt: "hi", MaxTokens: 8})
	if !rec.OK || rec.Error != "" {
		t.Fatalf("not ok: %+v", rec)
	}
	if rec.ID != "r1" || rec.Phase != "formal" || rec.PromptID != "p" || rec.MaxTokens != 8 {
		t.Errorf("identity not copied: %+v", rec)
	}
	if ttft := rec.FirstTokenAt - rec.SentAt; ttft < wait.Seconds() {
		t.Errorf("ttft %.3fs is shorter than the server's %v wait: the role-only chunk was taken as the first token", ttft, wait)
	}
	if !(rec.SentAt < rec.FirstTokenAt && rec.FirstTokenAt <= rec.DoneAt) {
		t.Errorf("times out of order: sent %f first %f done %f", rec.SentAt, rec.FirstTokenAt, rec.DoneAt)
	}
	if len(rec.TokenTimes) != 2 || rec.TokenTimes[0] != rec.FirstTokenAt || rec.TokenTimes[1] < rec.TokenTimes[0] {
		t.Errorf("token times %v (first %f)", rec.TokenTimes, rec.FirstTokenAt)
	}
	if rec.OutputTokens != 2 || rec.PromptTokens != 5 || rec.TokensSource != SourceUsage || rec.OutputChars != 5 {
		t.Errorf("counts: %+v", rec)
	}
}

func TestUsagePreferredOverChunkCount(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), content("c"), finishChunk, usageChunk(11, 7), "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true, Prompt: "x"})
	if !rec.OK || rec.OutputTokens != 7 || rec.TokensSource != SourceUsage || rec.PromptTokens != 11 {
		t.Fatalf("want 7 tokens from usage: %+v", rec)
	}
	if len(rec.TokenTimes) != 3 || rec.TokenCounts != nil {
		t.Fatalf("token times %v counts %v, want 3 times and no counts (1 each)", rec.TokenTimes, rec.TokenCounts)
	}
}

func TestNoUsageEstimatesFromCharacters(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		// 10 + 12 = 22 characters (é is one) → 22/4 = 5 tokens. No [DONE]:
		// the stream ends after a finish_reason, which is a success.
		send(w, content("abcdefghij"), content("héllo world!"), finishChunk)
	})
	rec := do(t, srv.URL, Request{Chat: true, Prompt: "x"})
	if !rec.OK || rec.OutputChars != 22 || rec.OutputTokens != 5 || rec.TokensSource != SourceEstimate {
		t.Fatalf("want 22 chars, 5 estimated tokens, ok: %+v", rec)
	}
	if rec.DoneAt < rec.FirstTokenAt {
		t.Fatalf("done %f before first token %f", rec.DoneAt, rec.FirstTokenAt)
	}
	// A tiny answer still counts one token.
	srv2 := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("ok"), finishChunk, "[DONE]")
	})
	if rec := do(t, srv2.URL, Request{Chat: true}); rec.OutputTokens != 1 || rec.TokensSource != SourceEstimate {
		t.Fatalf("want max(1, 2/4) = 1: %+v", rec)
	}
}

func TestStreamCutKeepsPartialData(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, roleChunk, content("abcd"), content("efgh"))
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	})
	rec := do(t, srv.URL, Request{Chat: true, Prompt: "x"})
	if rec.OK || !strings.HasPrefix(rec.Error, "stream cut: ") {
		t.Fatalf("want a failed, cut stream: %+v", rec)
	}
	if rec.FirstTokenAt == 0 || len(rec.TokenTimes) != 2 || rec.OutputChars != 8 || rec.DoneAt < rec.FirstTokenAt {
		t.Fatalf("partial data lost: %+v", rec)
	}
	// What arrived is recorded, but a failed request carries no output
	// tokens: its chars/4 estimate (8/4 = 2) must not count.
	if rec.OutputTokens != 0 || rec.TokensSource != "" {
		t.Fatalf("a cut stream kept tokens: %+v", rec)
	}
}

func TestStreamEndsWithoutDoneOrFinish(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abcd"))
	})
	rec := do(t, srv.URL, Request{Chat: true})
	if rec.OK || rec.Error != "stream ended before [DONE] or a finish_reason" || rec.OutputChars != 4 {
		t.Fatalf("%+v", rec)
	}
}

func TestHTTPErrorStatus(t *testing.T) {
	long := `{"object":"error","message":"` + strings.Repeat("model is overloaded ", 40) + `"}`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, long)
	})
	rec := do(t, srv.URL, Request{Chat: true})
	if rec.OK || !strings.HasPrefix(rec.Error, `http 500: {"object":"error","message":"model is overloaded`) {
		t.Fatalf("%+v", rec)
	}
	if len(rec.Error) > len("http 500: ")+maxErrorBody {
		t.Fatalf("error keeps %d bytes of the body, want at most %d", len(rec.Error)-len("http 500: "), maxErrorBody)
	}
	if rec.OutputTokens != 0 || rec.TokensSource != "" || rec.SentAt == 0 || rec.DoneAt < rec.SentAt {
		t.Fatalf("%+v", rec)
	}
}

func TestServerThatNeverAnswersTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	clock := NewClock()
	c := NewClient(srv.URL, WithClock(clock), WithRequestTimeout(200*time.Millisecond))
	t0 := clock()
	rec := c.Do(context.Background(), Request{Chat: true})
	if rec.OK || rec.Error != "request timeout after 200ms" {
		t.Fatalf("%+v", rec)
	}
	if rec.DoneAt-t0 < 0.2 {
		t.Fatalf("gave up after %.3fs", rec.DoneAt-t0)
	}
}

func TestTimeoutMidStreamKeepsPartialData(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abc"))
		<-r.Context().Done()
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithRequestTimeout(200*time.Millisecond))
	if rec.OK || rec.Error != "request timeout after 200ms" || rec.OutputChars != 3 || len(rec.TokenTimes) != 1 {
		t.Fatalf("%+v", rec)
	}
}

// signalTransport closes got once a response body has handed the client
// bytes containing marker, so a test can act after the client has the data.
type signalTransport struct {
	marker string
	got    chan struct{}
}

func (s *signalTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := NewTransport().RoundTrip(r)
	if err == nil {
		resp.Body = &signalBody{ReadCloser: resp.Body, t: s}
	}
	return resp, err
}

type signalBody struct {
	io.ReadCloser
	t *signalTransport
}

func (b *signalBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if strings.Contains(string(p[:n]), b.t.marker) {
		close(b.t.got)
	}
	return n, err
}

func TestCancellation(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abc"))
		<-r.Context().Done()
	})
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{nil, "cancelled"},
		{errors.New("max duration"), "cancelled: max duration"},
	} {
		st := &signalTransport{marker: "abc", got: make(chan struct{})}
		c := NewClient(srv.URL, WithHTTPClient(&http.Client{Transport: st}))
		ctx, cancel := context.WithCancelCause(context.Background())
		go func() { <-st.got; cancel(tc.cause) }()
		if rec := c.Do(ctx, Request{Chat: true}); rec.OK || rec.Error != tc.want || rec.OutputChars != 3 || rec.FirstTokenAt == 0 {
			t.Fatalf("%+v", rec)
		}
	}
	// Cancelled before sending.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rec := NewClient(srv.URL).Do(ctx, Request{Chat: true}); rec.OK || rec.Error != "cancelled" || rec.FirstTokenAt != 0 {
		t.Fatalf("%+v", rec)
	}
}

func TestReasoningContent(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, roleChunk)
		time.Sleep(50 * time.Millisecond)
		send(w,
			`{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think."},"finish_reason":null}]}`,
			// Both names carry the same text in some servers: counted once.
			`{"choices":[{"index":0,"delta":{"reasoning":" Ok.","reasoning_content":" Ok."},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{"content":"42","reasoning_content":null},"finish_reason":null}]}`,
			finishChunk,
			`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":17}}}`,
			"[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true})
	if !rec.OK || rec.OutputTokens != 20 || rec.ReasoningTokens != 17 || rec.OutputChars != 13+4+2 {
		t.Fatalf("%+v", rec)
	}
	if len(rec.TokenTimes) != 3 || rec.FirstTokenAt != rec.TokenTimes[0] || rec.FirstTokenAt-rec.SentAt < 0.05 {
		t.Fatalf("first token must be the first reasoning chunk: %+v", rec)
	}
}

func TestLlamaCppTimings(t *testing.T) {
	timings := `"timings":{"prompt_n":12,"prompt_ms":30.5,"prompt_per_second":393.4,"predicted_n":3,"predicted_ms":45.1,"predicted_per_second":66.5}`
	withUsage := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), content("c"),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3},`+timings+`}`,
			"[DONE]")
	})
	rec := do(t, withUsage.URL, Request{})
	want := map[string]float64{"prompt_n": 12, "prompt_ms": 30.5, "prompt_per_second": 393.4, "predicted_n": 3, "predicted_ms": 45.1, "predicted_per_second": 66.5}
	if !rec.OK || rec.TokensSource != SourceUsage || len(rec.EngineTimings) != len(want) {
		t.Fatalf("%+v", rec)
	}
	for k, v := range want {
		if rec.EngineTimings[k] != v {
			t.Errorf("timings[%s] = %v, want %v", k, rec.EngineTimings[k], v)
		}
	}
	// Without usage, the engine's own counter beats the estimate.
	noUsage := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abcdefghijklmnop"), `{"choices":[{"index":0,"text":"","finish_reason":"stop"}],`+timings+`}`)
	})
	rec = do(t, noUsage.URL, Request{})
	if !rec.OK || rec.OutputTokens != 3 || rec.PromptTokens != 12 || rec.TokensSource != SourceEngine {
		t.Fatalf("%+v", rec)
	}
}

func TestErrorInStream(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abc"), `{"error":{"message":"engine died","type":"InternalServerError","code":500}}`, "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true})
	if rec.OK || rec.Error != "engine died" || rec.OutputChars != 3 {
		t.Fatalf("%+v", rec)
	}
	bad := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abc"), `{"choices": [`, "[DONE]")
	})
	if rec := do(t, bad.URL, Request{Chat: true}); rec.OK || !strings.HasPrefix(rec.Error, "invalid chunk") {
		t.Fatalf("%+v", rec)
	}
}

func TestRequestBodyAndHeaders(t *testing.T) {
	type seen struct {
		path, auth, accept string
		body               map[string]any
	}
	got := make(chan seen, 2)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var s seen
		s.path, s.auth, s.accept = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Accept")
		json.NewDecoder(r.Body).Decode(&s.body)
		got <- s
		streamHeaders(w)
		send(w, content("x"), finishChunk, "[DONE]")
	})
	c := NewClient(srv.URL+"/v1/", WithAPIKey("sk-secret"))
	rec := c.Do(context.Background(), Request{
		Chat: true, Model: "m", MaxTokens: 32, Temperature: 0.5, IgnoreEOS: true,
		Messages: []workload.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}},
		Extra:    map[string]any{"top_p": 0.9, "stream": false},
	})
	if !rec.OK {
		t.Fatalf("%+v", rec)
	}
	s := <-got
	if s.path != "/v1/chat/completions" || s.auth != "Bearer sk-secret" || s.accept != "text/event-stream" {
		t.Errorf("path %q auth %q accept %q", s.path, s.auth, s.accept)
	}
	b := s.body
	if b["stream"] != true || b["model"] != "m" || b["max_tokens"] != 32.0 || b["temperature"] != 0.5 || b["ignore_eos"] != true || b["top_p"] != 0.9 {
		t.Errorf("body %v", b)
	}
	if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", b["stream_options"])
	}
	if msgs, _ := b["messages"].([]any); len(msgs) != 2 {
		t.Errorf("messages %v", b["messages"])
	}
	// Completions: the prompt text, no messages, no ignore_eos unless asked.
	c.Do(context.Background(), Request{Prompt: "once upon", Temperature: 0})
	s = <-got
	if s.path != "/v1/completions" || s.body["prompt"] != "once upon" || s.body["messages"] != nil || s.body["ignore_eos"] != nil || s.body["temperature"] != 0.0 {
		t.Errorf("completions: %q %v", s.path, s.body)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "bad key: "+r.Header.Get("Authorization"))
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithAPIKey("sk-very-secret"))
	if rec.OK || strings.Contains(rec.Error, "sk-very-secret") || !strings.Contains(rec.Error, "http 401: bad key: Bearer [redacted]") {
		t.Fatalf("%q", rec.Error)
	}
	b, _ := json.Marshal(rec)
	if strings.Contains(string(b), "sk-very-secret") {
		t.Fatalf("key in record %s", b)
	}
}

func TestNonStreamedResponse(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
	})
	rec := do(t, srv.URL, Request{Chat: true})
	if !rec.OK || rec.OutputTokens != 4 || rec.OutputChars != 11 || len(rec.TokenTimes) != 1 || len(rec.TokenCounts) != 1 || rec.TokenCounts[0] != 4 {
		t.Fatalf("%+v", rec)
	}
	if rec.FirstTokenAt != rec.DoneAt {
		t.Fatalf("first %f done %f", rec.FirstTokenAt, rec.DoneAt)
	}
}

func TestConnectionReuseAndTokenTimesOff(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abc"), finishChunk, usageChunk(1, 1), "[DONE]")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, WithRecordTokenTimes(false))
	for i := 0; i < 20; i++ {
		rec := c.Do(context.Background(), Request{Chat: true})
		if !rec.OK || rec.TokenTimes != nil || rec.FirstTokenAt == 0 {
			t.Fatalf("%+v", rec)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 sequential requests used %d connections, want 1 (the body is not drained)", n)
	}
}

// stepClock is a clock that moves one second each time it is read. A fake
// server streams thousands of tokens in a few milliseconds, faster than
// one request's tokens can arrive (archive.MaxOutputTokensIn, which the
// client holds a count to); tests about parsing read their times from it.
func stepClock() func() float64 {
	var mu sync.Mutex
	now := 1000.0
	return func() float64 { mu.Lock(); defer mu.Unlock(); now++; return now }
}

func TestLongSSELine(t *testing.T) {
	big := strings.Repeat("z", 3*readBufSize)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content(big), content("!"), finishChunk, "[DONE]")
	})
	// 49,153 characters, an estimate of 12,288 tokens: at least 1.2 s.
	rec := do(t, srv.URL, Request{Chat: true}, WithClock(stepClock()), WithReceiveStamps(false))
	if !rec.OK || rec.OutputChars != len(big)+1 || len(rec.TokenTimes) != 2 {
		t.Fatalf("ok %v chars %d times %d err %q", rec.OK, rec.OutputChars, len(rec.TokenTimes), rec.Error)
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rec := do(t, "http://"+addr, Request{Chat: true})
	if rec.OK || !strings.HasPrefix(rec.Error, "send: ") || strings.Contains(rec.Error, "http://") {
		t.Fatalf("%q", rec.Error)
	}
}

func TestInjectedClock(t *testing.T) {
	var mu sync.Mutex
	now := 1000.0
	clock := func() float64 { mu.Lock(); defer mu.Unlock(); now++; return now }
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, roleChunk, content("a"), content("b"), finishChunk, "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithClock(clock), WithReceiveStamps(false))
	// Every time comes from the clock: whole numbers after 1000, in order.
	times := append([]float64{rec.SentAt, rec.FirstTokenAt}, rec.TokenTimes...)
	times = append(times, rec.DoneAt)
	for i, v := range times {
		if v <= 1000 || v != float64(int(v)) || (i > 0 && v < times[i-1]) {
			t.Fatalf("times %v not from the injected clock", times)
		}
	}
}

// TestNoPerTokenAllocations checks the hot path: a request of 1,010 tokens
// allocates no more than one of 10 tokens, bar a little slack (the whole
// process is counted; the server, from bench_test.go, writes precomputed
// frames).
func TestNoPerTokenAllocations(t *testing.T) {
	srv := startStreamServer(t, NewClock(), 0, 0)
	// 1,010 tokens in milliseconds: the client's times from stepClock.
	c := NewClient(srv.url(), WithClock(stepClock()), WithReceiveStamps(false))
	allocs := func(tokens int) float64 {
		r := Request{Chat: true, Prompt: "p", MaxTokens: tokens, Extra: map[string]any{"bench_id": 0}}
		return testing.AllocsPerRun(20, func() {
			if rec := c.Do(context.Background(), r); !rec.OK || rec.OutputTokens != tokens {
				t.Fatalf("%+v", rec)
			}
		})
	}
	small, large := allocs(10), allocs(1010)
	if perToken := (large - small) / 1000; perToken > 0.02 {
		t.Fatalf("%.3f allocations per token (%.0f for 10 tokens, %.0f for 1010)", perToken, small, large)
	}
	t.Logf("%.0f allocations per request, %.0f with 1,000 more tokens", small, large)
}
