package openai

import (
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/internal/enginetest"
)

// TestTokenTimesAreArrivalTimes: the client is held up for 150 ms just
// after a token arrives (its clock stalls on the first reading after the
// server wrote it). With receive stamps first_token_at is still the
// arrival; without them it is the late reading.
func TestTokenTimesAreArrivalTimes(t *testing.T) {
	enginetest.HoldStampsOn(t)
	var wroteAt, wroteB atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		wroteAt.Store(time.Now().UnixNano())
		send(w, content("a"))
		time.Sleep(300 * time.Millisecond)
		wroteB.Store(time.Now().UnixNano())
		send(w, content("b"), finishChunk, "[DONE]")
	})
	for _, stamps := range []bool{true, false} {
		wroteAt.Store(0)
		var stalled atomic.Bool
		clock := func() float64 {
			if wroteAt.Load() != 0 && !stalled.Swap(true) {
				time.Sleep(150 * time.Millisecond)
			}
			return float64(time.Now().UnixNano()) / 1e9
		}
		rec := do(t, srv.URL, Request{Chat: true}, WithClock(clock), WithReceiveStamps(stamps))
		if !rec.OK || len(rec.TokenTimes) != 2 {
			t.Fatalf("stamps %v: %+v", stamps, rec)
		}
		delay := rec.FirstTokenAt - float64(wroteAt.Load())/1e9
		if stamps && (delay < 0 || delay > 0.05) {
			t.Errorf("with stamps first_token_at is %.3fs after the write, want under 0.05s", delay)
		}
		if !stamps && delay < 0.15 {
			t.Errorf("without stamps first_token_at is %.3fs after the write, want at least the 0.15s stall", delay)
		}
		// The second token came about 300 ms after the first at the
		// server (more on a busy machine: its own write times say).
		want := float64(wroteB.Load()-wroteAt.Load()) / 1e9
		if gap := rec.TokenTimes[1] - rec.TokenTimes[0]; stamps && math.Abs(gap-want) > 0.05 {
			t.Errorf("with stamps the gap is %.3fs, want the server's %.3fs", gap, want)
		}
	}
}
