package openai

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestStreamTimesInOrder: whatever the clock reads (here each reading
// is 1 ms behind the one before it, and no receive stamps), a
// record's times are in order: sent_at <= token_times[i] <=
// token_times[i+1] <= done_at, done_at included when the stream ends
// without [DONE].
func TestStreamTimesInOrder(t *testing.T) {
	for _, tail := range []string{"data: [DONE]\n\n", ""} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			for range 20 {
				send(w, content("ab"))
			}
			send(w, finishChunk)
			io.WriteString(w, tail)
		})
		var n atomic.Int64
		clock := func() float64 { return 1.7e9 - float64(n.Add(1))*1e-3 } // each reading 1 ms behind the last
		rec := do(t, srv.URL, Request{Chat: true}, WithClock(clock), WithReceiveStamps(false))
		if !rec.OK || len(rec.TokenTimes) != 20 {
			t.Fatalf("ok %v %q, %d token times", rec.OK, rec.Error, len(rec.TokenTimes))
		}
		prev := rec.SentAt
		for i, tt := range append(rec.TokenTimes, rec.DoneAt) {
			if tt < prev {
				t.Errorf("tail %q: time %d (%.6f) before the one before it (%.6f)", tail, i, tt, prev)
			}
			prev = tt
		}
	}
}
