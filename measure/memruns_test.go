package measure

import (
	"math/rand/v2"
	"testing"
)

// TestMemRuns holds memRuns to the plain list it stands for: by hand on
// a short one, then against a naive scan on random lists with long runs
// and unknowns.
func TestMemRuns(t *testing.T) {
	var m memRuns
	for _, v := range []int64{-1, -1, 5, 5, 5, 7, -1, 7} {
		m.appendMem(v)
	}
	// runs: [-1 from 0] [5 from 2] [7 from 5] [-1 from 6] [7 from 7]
	if len(m.start) != 5 || m.n != 8 {
		t.Fatalf("%d runs of %d samples, want 5 of 8", len(m.start), m.n)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"at(0)", m.at(0), -1},
		{"at(4)", m.at(4), 5},
		{"at(6)", m.at(6), -1},
		{"at(7)", m.at(7), 7},
		{"maxIn(0, 2)", m.maxIn(0, 2), -1},
		{"maxIn(1, 3)", m.maxIn(1, 3), 5},
		{"maxIn(3, 8)", m.maxIn(3, 8), 7},
		{"maxIn(4, 4)", m.maxIn(4, 4), -1},
		{"lastKnownBefore(0)", m.lastKnownBefore(0), -1},
		{"lastKnownBefore(2)", m.lastKnownBefore(2), -1},
		{"lastKnownBefore(3)", m.lastKnownBefore(3), 5},
		{"lastKnownBefore(7)", m.lastKnownBefore(7), 7},
		{"lastKnownBefore(8)", m.lastKnownBefore(8), 7},
		{"lastKnownBefore(9)", m.lastKnownBefore(9), 7},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}

	rng := rand.New(rand.NewPCG(46, 1))
	for range 200 {
		n := 1 + rng.IntN(300)
		xs := make([]int64, n)
		var m memRuns
		v := int64(-1)
		for i := range xs {
			if rng.IntN(20) == 0 {
				v = int64(rng.IntN(5)) - 1
			}
			xs[i] = v
			m.appendMem(v)
		}
		for range 50 {
			lo, hi := rng.IntN(n+1), rng.IntN(n+1)
			if lo > hi {
				lo, hi = hi, lo
			}
			want := int64(-1)
			for _, x := range xs[lo:hi] {
				want = max(want, x)
			}
			if got := m.maxIn(lo, hi); got != want {
				t.Fatalf("maxIn(%d, %d) = %d, want %d (%v)", lo, hi, got, want, xs)
			}
			want = -1
			for i := hi - 1; i >= 0; i-- {
				if xs[i] >= 0 {
					want = xs[i]
					break
				}
			}
			if got := m.lastKnownBefore(hi); got != want {
				t.Fatalf("lastKnownBefore(%d) = %d, want %d (%v)", hi, got, want, xs)
			}
			if lo < n && m.at(lo) != xs[lo] {
				t.Fatalf("at(%d) = %d, want %d", lo, m.at(lo), xs[lo])
			}
		}
	}
}
