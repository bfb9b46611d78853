package streamcore

import (
	"math"
	"testing"
)

// seqStamper is a connection whose reads are numbered, with no stamp (the
// clock's reading is the time).
type seqStamper struct{ seq uint64 }

func (s *seqStamper) LastReceived() int64 { return 0 }
func (s *seqStamper) LastRead() ReadStamp { return ReadStamp{Seq: s.seq} }

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
		var a Arrivals
		s := &seqStamper{}
		var clock float64
		for i, st := range tc.steps {
			s.seq, clock = st.seq, st.clock
			var rs Stamper
			if tc.stamped {
				rs = s
			}
			if got := a.Now(func() float64 { return clock }, rs, tc.floor); got != st.want {
				t.Errorf("%s: event %d: %.9f, want %.9f", tc.name, i, got, st.want)
			}
		}
	}
}
