package ollama_test

import (
	"context"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulebench/joulebench/engines/ollama"
)

// jitterClock reads like a clock whose every other reading is one float64
// step (2^-22 s at today's Unix times) behind the one before it: what two
// separate conversions of one kernel stamp can give (the clock and the
// stamp's age are read at different instants).
func jitterClock() func() float64 {
	const base = 1.7e9 // today's Unix seconds: a step is 2^-22 s
	var n atomic.Int64
	return func() float64 {
		k := n.Add(1)
		t := base + float64(k/2)*1e-3 // the reading goes up by 1 ms every two calls...
		if k%2 == 0 {
			t = math.Nextafter(t, 0) // ...and every other reading is a step behind
		}
		return t
	}
}

// TestTokenTimesNeverGoBack: Ollama's native stream, many lines per read
// (one write), under a clock whose readings go back by a rounding step:
// sent_at <= first_token_at = token_times[0] <= token_times[i] <=
// token_times[i+1] <= done_at. Before the times were handed out by the
// exchange (one time per read, the maximum with the last), each line took
// its own conversion and 30-35 of 208 requests to a real Ollama had a
// token time one step before the one before it.
func TestTokenTimesNeverGoBack(t *testing.T) {
	srv := ndjsonServer(t, func(w http.ResponseWriter, r *http.Request) {
		ls := make([]string, 0, 41)
		for range 40 {
			ls = append(ls, tokenLine)
		}
		lines(w, append(ls, doneLine("40"))...)
	})
	c := ollama.NewClient(srv.URL, ollama.WithClock(jitterClock()))
	req := chat
	req.MaxTokens = 64
	for i := range 5 {
		rec := c.Do(context.Background(), req)
		if !rec.OK || len(rec.TokenTimes) != 40 {
			t.Fatalf("request %d: ok %v %q, %d token times", i, rec.OK, rec.Error, len(rec.TokenTimes))
		}
		prev := rec.SentAt
		for j, tt := range rec.TokenTimes {
			if tt < prev {
				t.Fatalf("request %d: token_times[%d] = %.9f is %.3g s before the time before it (%.9f)", i, j, tt, prev-tt, prev)
			}
			prev = tt
		}
		if rec.FirstTokenAt != rec.TokenTimes[0] || rec.DoneAt < prev {
			t.Errorf("request %d: first %.9f, done %.9f, last token %.9f", i, rec.FirstTokenAt, rec.DoneAt, prev)
		}
		if strings.Contains(rec.Error, "before") {
			t.Errorf("request %d: %s", i, rec.Error)
		}
	}
}
