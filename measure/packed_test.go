package measure

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// packedPair returns n requests with token times (some with token_counts,
// some out of order, some failed), and the same requests with their
// times packed.
func packedPair(n int) (plain, packed []*record.Request) {
	rng := rand.New(rand.NewPCG(46, 7))
	var buf []byte
	for i := range n {
		k := 2 + rng.IntN(300)
		first := 1717405260 + float64(i)*0.01
		r := &record.Request{ID: "r", OK: i%17 != 0, FirstTokenAt: first, OutputTokens: k}
		t := first
		for range k {
			r.TokenTimes = append(r.TokenTimes, t)
			t += 0.02 + 0.01*rng.Float64()
		}
		if i%5 == 0 {
			r.TokenCounts = make([]int, k)
			for j := range r.TokenCounts {
				r.TokenCounts[j] = rng.IntN(3)
			}
		}
		if i%11 == 0 {
			r.TokenTimes[1], r.TokenTimes[2] = r.TokenTimes[2], r.TokenTimes[1] // shapes sort; ITL reports it
		}
		r.DoneAt = t
		q := *r
		q.TokenTimes = slices.Clone(r.TokenTimes)
		buf = q.PackTokenTimes(buf)
		plain, packed = append(plain, r), append(packed, &q)
	}
	return plain, packed
}

// ITL and the token shapes of steady state give the same values from
// packed token times as from the list (issue 46).
func TestPackedTokenTimesSameFigures(t *testing.T) {
	plain, packed := packedPair(3000)
	inOrder := func(rs []*record.Request) []*record.Request {
		var out []*record.Request
		for i, r := range rs {
			if i%11 != 0 {
				out = append(out, r)
			}
		}
		return out
	}
	want, err := NewITLValues(inOrder(plain), 50, 99)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewITLValues(inOrder(packed), 50, 99)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Slice(), want.Slice()) || got.Len() != want.Len() {
		t.Fatalf("ITL values differ packed (%d values)", got.Len())
	}
	for _, p := range []float64{0, 50, 90, 99, 100} {
		g, gerr := got.Percentile(p)
		w, werr := want.Percentile(p)
		if g != w || (gerr == nil) != (werr == nil) {
			t.Errorf("p%v: %v, %v packed; %v, %v", p, g, gerr, w, werr)
		}
	}
	if _, err := NewITLValues(packed); err == nil {
		t.Error("a request's times out of order, packed: no ITL error")
	}
	for i := range plain {
		ws, werr := shapeOf(plain[i])
		gs, gerr := shapeOf(packed[i])
		if !reflect.DeepEqual(gs, ws) || (gerr == nil) != (werr == nil) {
			t.Fatalf("request %d: shape %+v, %v packed; %+v, %v", i, gs, gerr, ws, werr)
		}
	}
}
