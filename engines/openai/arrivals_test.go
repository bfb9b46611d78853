package openai

import (
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
)

// seqStamper is a connection whose reads are numbered, with no stamp (the
// clock's reading is the time).
type seqStamper struct{ seq uint64 }

func (s *seqStamper) lastReceived() int64 { return 0 }
func (s *seqStamper) lastRead() readStamp { return readStamp{seq: s.seq} }

// TestArrivalsMonotonic: one time per read, never going back, never before
// the floor, whatever the clock reads. Each row: the read the event came
// in (0: no stamper), the clock's reading, the time handed out.
func TestArrivalsMonotonic(t *testing.T) {
	const base = 1.7e9
	step := math.Nextafter(base, 2*base) - base // 2^-22 s
	for _, tc := range []struct {
		name    string
		stamped bool
		floor   float64
		steps   []struct {
			seq         uint64
			clock, want float64
		}
	}{
		{"one read shares its time", true, 0, []struct {
			seq         uint64
			clock, want float64
		}{
			{1, base + 1, base + 1}, {1, base + 2, base + 1}, {2, base + 3, base + 3}}},
		{"a step back is held at the last", true, 0, []struct {
			seq         uint64
			clock, want float64
		}{
			{1, base + step, base + step}, {2, base, base + step}, {3, base + 2*step, base + 2*step}}},
		{"no stamps: every reading, held at the last", false, 0, []struct {
			seq         uint64
			clock, want float64
		}{
			{0, base + 1, base + 1}, {0, base + 1 - step, base + 1}, {0, base + 2, base + 2}}},
		{"never before the floor (sent_at)", true, base + 5, []struct {
			seq         uint64
			clock, want float64
		}{
			{1, base + 4, base + 5}, {2, base + 6, base + 6}}},
	} {
		var a arrivals
		s := &seqStamper{}
		var clock float64
		for i, st := range tc.steps {
			s.seq, clock = st.seq, st.clock
			var rs receiveStamper
			if tc.stamped {
				rs = s
			}
			if got := a.now(func() float64 { return clock }, rs, tc.floor); got != st.want {
				t.Errorf("%s: event %d: %.9f, want %.9f", tc.name, i, got, st.want)
			}
		}
	}
}

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
