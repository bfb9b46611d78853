package openai

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// Misbehaving servers: each fault ends the request quickly, failed, with
// its reason, and with 0 output tokens.

func TestStallAfterOneToken(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("abcd"))
		<-r.Context().Done() // then nothing, ever
	})
	clock := NewClock()
	c := NewClient(srv.URL, WithClock(clock), WithStallTimeout(30*time.Millisecond))
	t0 := clock()
	rec := c.Do(context.Background(), Request{Chat: true})
	if rec.OK || rec.Error != "stall timeout: no data for 30ms" {
		t.Fatalf("%+v", rec)
	}
	if rec.OutputChars != 4 || len(rec.TokenTimes) != 1 || rec.OutputTokens != 0 || rec.TokensSource != "" {
		t.Fatalf("want the partial data kept and no tokens: %+v", rec)
	}
	if d := rec.DoneAt - t0; d < 0.03 || d > 5 {
		t.Fatalf("gave up after %.3fs, want just past 30ms", d)
	}
}

func TestStallTimerReArmedByEveryChunk(t *testing.T) {
	// Eight chunks 30 ms apart: 240 ms in all, beyond the stall limit, but
	// never 150 ms without data.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		for range 8 {
			send(w, content("ab"))
			time.Sleep(30 * time.Millisecond) // the server's pace, not a synchronisation
		}
		send(w, content("ab"), content("ab"), finishChunk, usageChunk(1, 10), "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithStallTimeout(150*time.Millisecond))
	if !rec.OK || rec.OutputTokens != 10 {
		t.Fatalf("a slow but live stream was cut: %+v", rec)
	}
}

func TestStallDoesNotCountQueueTimeBeforeFirstByte(t *testing.T) {
	// The server answers only after 60 ms (a request queued behind
	// others); the stall limit of 20 ms starts with the first bytes.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(60 * time.Millisecond) // the server's queue, not a synchronisation
		streamHeaders(w)
		send(w, content("ok"), finishChunk, "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithStallTimeout(20*time.Millisecond))
	if !rec.OK {
		t.Fatalf("%+v", rec)
	}
}

func TestEndlessStreamHitsRequestTimeout(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		for r.Context().Err() == nil {
			send(w, content("ab"))
			time.Sleep(time.Millisecond)
		}
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithRequestTimeout(300*time.Millisecond), WithStallTimeout(5*time.Second))
	if rec.OK || rec.Error != "request timeout after 300ms" || rec.OutputTokens != 0 || rec.OutputChars == 0 {
		t.Fatalf("%+v", rec)
	}
}

func TestFlightLimitsOverrideAndTokensReported(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), content("c"))
		<-r.Context().Done()
	})
	// The client's own limits are an hour; the flight's win.
	c := NewClient(srv.URL, WithStallTimeout(time.Hour))
	f := &workload.Flight{ID: "x", Limits: workload.Limits{Stall: 20 * time.Millisecond}}
	rec := c.DoFlight(context.Background(), Request{Chat: true}, f)
	if rec.OK || rec.Error != "stall timeout: no data for 20ms" {
		t.Fatalf("%+v", rec)
	}
	if f.Tokens() != 3 {
		t.Fatalf("flight saw %d text chunks, want 3", f.Tokens())
	}
	f = &workload.Flight{ID: "y", Limits: workload.Limits{Timeout: 25 * time.Millisecond}}
	if rec := c.DoFlight(context.Background(), Request{Chat: true}, f); rec.Error != "request timeout after 25ms" {
		t.Fatalf("%+v", rec)
	}
}

func TestMalformedSSE(t *testing.T) {
	for _, tc := range []struct{ name, chunk string }{
		{"not json", `{"choices":[{"delta":{"content":"ab"`},
		{"wrong type", `{"choices":[{"delta":{"content":42}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				send(w, content("abcdefgh"), tc.chunk, finishChunk, "[DONE]")
			})
			rec := do(t, srv.URL, Request{Chat: true})
			if rec.OK || rec.Error == "" || rec.OutputTokens != 0 || rec.OutputChars != 8 {
				t.Fatalf("%+v", rec)
			}
		})
	}
}

func TestImplausibleCounts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		usage     string
		maxTokens int
		want      string // error prefix; "" = ok
		tokens    int
	}{
		{"plausible", usageChunk(5, 7), 16, "", 7},
		{"at max_tokens", usageChunk(5, 16), 16, "", 16},
		{"negative output", usageChunk(5, -3), 16, "implausible token count from the server: output tokens -3 (usage) is negative", 0},
		{"negative prompt", usageChunk(-1, 3), 16, "implausible token count from the server: prompt tokens -1 (usage) is negative", 0},
		{"above max_tokens", usageChunk(5, 17), 16, "implausible token count from the server: output tokens 17 (usage) is above max_tokens 16", 0},
		{"absurd", `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":99999999999999999999999}}`, 0,
			fmt.Sprintf("implausible token count from the server: output tokens %d (usage) is above %d", int(^uint(0)>>1), MaxPlausibleTokens), 0},
		{"absurd float", `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1e300}}`, 0,
			"implausible token count from the server: output tokens", 0},
		{"just above plausible", usageChunk(1, MaxPlausibleTokens+1), 0, "implausible token count from the server: output tokens 4194305 (usage) is above 4194304", 0},
		// Prompt tokens are held to the archive reader's bound (2^27 =
		// 134217728), live: 10^15 fails the request. Before, it was
		// archived, and the reader then refused the whole run.
		{"prompt at the bound", usageChunk(1<<27, 3), 16, "", 3},
		{"prompt 10^15", usageChunk(1e15, 3), 16, "implausible token count from the server: prompt tokens 1000000000000000 (usage) is above 134217728", 0},
		{"prompt just above the bound", usageChunk(1<<27+1, 3), 16, "implausible token count from the server: prompt tokens 134217729 (usage) is above 134217728", 0},
		{"cached prompt 10^15", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":1000000000000000}}}`, 16,
			"implausible token count from the server: cached prompt tokens 1000000000000000 (usage) is above 134217728", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				send(w, content("abcd"), finishChunk, tc.usage, "[DONE]")
			})
			rec := do(t, srv.URL, Request{Chat: true, MaxTokens: tc.maxTokens})
			if tc.want == "" {
				if !rec.OK || rec.OutputTokens != tc.tokens {
					t.Fatalf("%+v", rec)
				}
				return
			}
			if rec.OK || !strings.HasPrefix(rec.Error, tc.want) || rec.OutputTokens != 0 || rec.PromptTokens < 0 {
				t.Fatalf("got %q %+v, want %q", rec.Error, rec, tc.want)
			}
			// What is archived stays inside the reader's bounds.
			if rec.PromptTokens > archive.MaxPromptTokens || rec.CachedPromptTokens > archive.MaxPromptTokens || rec.CachedPromptTokens < 0 {
				t.Errorf("failed record keeps prompt tokens %d, cached %d: the archive reader refuses them", rec.PromptTokens, rec.CachedPromptTokens)
			}
		})
	}
}

func TestEstimateCappedAtMaxTokens(t *testing.T) {
	// No usage: 12 chars give the estimate 12/4 = 3, above max_tokens 1
	// (one long token): an estimate is capped, never a failure.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("Hello world!"), finishChunk, "[DONE]")
	})
	rec := do(t, srv.URL, Request{Chat: true, MaxTokens: 1})
	if !rec.OK || rec.OutputTokens != 1 || rec.TokensSource != SourceEstimate {
		t.Fatalf("%+v", rec)
	}
}

func TestQueryStringKeptInEndpoints(t *testing.T) {
	got := make(chan string, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + "?" + r.URL.RawQuery
		streamHeaders(w)
		send(w, content("ok"), finishChunk, "[DONE]")
	})
	for _, base := range []string{srv.URL + "/v1?key=s3cret", srv.URL + "/?key=s3cret", srv.URL + "?key=s3cret"} {
		rec := do(t, base, workload.Request{Chat: true})
		if !rec.OK {
			t.Fatalf("%s: %+v", base, rec)
		}
		if p := <-got; p != "/v1/chat/completions?key=s3cret" {
			t.Fatalf("%s: server saw %q", base, p)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"http://h:1", "/v1/models", "http://h:1/v1/models"},
		{"http://h:1/", "/v1/models", "http://h:1/v1/models"},
		{"http://h:1/v1", "/v1/models", "http://h:1/v1/models"},
		{"http://h:1/v1/", "/v1/models", "http://h:1/v1/models"},
		{"http://h:1/proxy/v1?key=a&b=c", "/v1/models", "http://h:1/proxy/v1/models?key=a&b=c"},
		{"http://u:p@h:1?key=a", "/api/chat", "http://u:p@h:1/api/chat?key=a"},
	} {
		if got := Endpoint(tc.base, tc.path); got != tc.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}

// TestFlightSeesTokensWhileStreaming: the text chunks read are in the
// flight's count while the stream is still open (the client reports them
// when it has used up what it read, not only at the end).
func TestFlightSeesTokensWhileStreaming(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), content("c"))
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		send(w, finishChunk, usageChunk(1, 3), "[DONE]")
	})
	c := NewClient(srv.URL)
	f := &workload.Flight{ID: "x"}
	done := make(chan record.Request, 1)
	go func() { done <- c.DoFlight(context.Background(), Request{Chat: true}, f) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.Tokens() < 3 {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("flight saw %d text chunks while the stream was open, want 3", f.Tokens())
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if rec := <-done; !rec.OK || f.Tokens() != 3 {
		t.Fatalf("flight %d chunks, %+v", f.Tokens(), rec)
	}
}
