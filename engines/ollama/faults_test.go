package ollama_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/workload"
)

// Misbehaving Ollama servers: each fault fails the request with its
// reason and 0 output tokens.

func ndjsonServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func lines(w http.ResponseWriter, ls ...string) {
	for _, l := range ls {
		io.WriteString(w, l+"\n")
	}
	w.(http.Flusher).Flush()
}

const tokenLine = `{"message":{"role":"assistant","content":"abcd"},"done":false}`

func doneLine(evalCount string) string {
	return `{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":` + evalCount + `}`
}

var chat = workload.Request{Chat: true, Model: "m", MaxTokens: 16, Messages: []workload.Message{{Role: "user", Content: "hi"}}}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		opts    []ollama.Option
		want    string // error prefix; "" = ok
		tokens  int
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("7")) }, nil, "", 7},
		{"stall after one token", func(w http.ResponseWriter, r *http.Request) {
			lines(w, tokenLine)
			<-r.Context().Done()
		}, []ollama.Option{ollama.WithStallTimeout(30 * time.Millisecond)}, "stall timeout: no data for 30ms", 0},
		{"endless stream", func(w http.ResponseWriter, r *http.Request) {
			for r.Context().Err() == nil {
				lines(w, tokenLine)
				time.Sleep(time.Millisecond)
			}
		}, []ollama.Option{ollama.WithRequestTimeout(50 * time.Millisecond), ollama.WithStallTimeout(time.Second)}, "request timeout after 50ms", 0},
		{"cut mid-stream", func(w http.ResponseWriter, r *http.Request) {
			lines(w, tokenLine, tokenLine)
			panic(http.ErrAbortHandler)
		}, nil, "stream cut: ", 0},
		{"http 500", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"out of memory"}`)
		}, nil, "http 500: out of memory", 0},
		{"malformed line", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, `{"message":`, doneLine("7")) }, nil, "bad stream line: ", 0},
		{"negative eval_count", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("-2")) }, nil,
			"implausible token count from the server: output tokens -2 (engine) is negative", 0},
		{"eval_count above max_tokens", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("17")) }, nil,
			"implausible token count from the server: output tokens 17 (engine) is above max_tokens 16", 0},
		{"absurd eval_count", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("1e300")) }, nil,
			"implausible token count from the server: output tokens", 0},
		{"eval_count 0 with text", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("0")) }, nil,
			"implausible token count from the server: output tokens 0 (engine) but the stream carried 4 characters of text", 0},
		{"eval_count 3.7", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("3.7")) }, nil,
			"implausible token count from the server: eval_count 3.7 is not a whole number", 0},
		// A done line whose counts do not decode fails the request; before,
		// the error was dropped and the request was OK with chars/4 as
		// its tokens (1 here).
		{"eval_count a string", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine(`"12"`)) }, nil,
			"implausible token count from the server: the done line's counts do not decode: ", 0},
		{"eval_count an object", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine(`{"n":12}`)) }, nil,
			"implausible token count from the server: the done line's counts do not decode: ", 0},
		{"prompt_eval_count a string", func(w http.ResponseWriter, r *http.Request) {
			lines(w, tokenLine, `{"done":true,"prompt_eval_count":"5","eval_count":1}`)
		}, nil, "implausible token count from the server: the done line's counts do not decode: ", 0},
		// prompt_eval_count is held to the archive reader's bound (2^27).
		{"prompt_eval_count 10^15", func(w http.ResponseWriter, r *http.Request) {
			lines(w, tokenLine, `{"done":true,"prompt_eval_count":1e15,"eval_count":1}`)
		}, nil, "implausible token count from the server: prompt tokens 1000000000000000 (engine) is above 134217728", 0},
		{"eval_count 3.0 is 3", func(w http.ResponseWriter, r *http.Request) { lines(w, tokenLine, doneLine("3.0")) }, nil, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := ndjsonServer(t, tc.handler)
			rec := ollama.NewClient(srv.URL, tc.opts...).Do(context.Background(), chat)
			if tc.want == "" {
				if !rec.OK || rec.OutputTokens != tc.tokens {
					t.Fatalf("%+v", rec)
				}
				return
			}
			if rec.OK || !strings.HasPrefix(rec.Error, tc.want) || rec.OutputTokens != 0 || rec.TokensSource != "" {
				t.Fatalf("got error %q, want %q: %+v", rec.Error, tc.want, rec)
			}
			if rec.PromptTokens < 0 || rec.PromptTokens > archive.MaxPromptTokens {
				t.Errorf("failed record keeps prompt tokens %d: the archive reader refuses it", rec.PromptTokens)
			}
			for k, v := range rec.EngineTimings {
				if v < 0 {
					t.Errorf("failed record keeps engine_timings.%s %v: the archive reader refuses it", k, v)
				}
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rec := ollama.NewClient("http://"+addr).Do(context.Background(), chat)
	if rec.OK || !strings.HasPrefix(rec.Error, "send: ") || !strings.Contains(rec.Error, "refused") {
		t.Fatalf("%q", rec.Error)
	}
}

func TestFlightLimitsAndTokens(t *testing.T) {
	srv := ndjsonServer(t, func(w http.ResponseWriter, r *http.Request) {
		lines(w, tokenLine, tokenLine)
		<-r.Context().Done()
	})
	f := &workload.Flight{ID: "x", Limits: workload.Limits{Stall: 20 * time.Millisecond}}
	rec := ollama.NewClient(srv.URL).DoFlight(context.Background(), chat, f)
	if rec.Error != "stall timeout: no data for 20ms" || f.Tokens() != 2 {
		t.Fatalf("tokens %d, %+v", f.Tokens(), rec)
	}
}

func TestQueryStringKept(t *testing.T) {
	got := make(chan string, 1)
	srv := ndjsonServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + "?" + r.URL.RawQuery
		lines(w, tokenLine, doneLine("1"))
	})
	if rec := ollama.NewClient(srv.URL+"/?key=s3cret").Do(context.Background(), chat); !rec.OK {
		t.Fatalf("%+v", rec)
	}
	if p := <-got; p != "/api/chat?key=s3cret" {
		t.Fatalf("server saw %q", p)
	}
}
