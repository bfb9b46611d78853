package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Attribution a block of segment ends at a time, with blocks of 1 to 7
// ends: every block edge falls between two of the ends (or holds the
// three ends at one time alone), and a segment lost or counted twice at
// an edge changes the hand-worked figures.
func TestAttributeBlocksHandWorked(t *testing.T) {
	pd := flat100(t)
	b := req("b", 3, 8, 50)
	// Chunks at 3, 5 and 8 with 0, 20 and 30 tokens: the first has no
	// time since the start and goes to the second, so b generates 20
	// tokens on [3, 5] and 30 on [5, 8], 10 tokens/s on both.
	b.TokenTimes, b.TokenCounts = []float64{3, 5, 8}, []int{0, 20, 30}
	cases := []struct {
		name string
		reqs []*record.Request
		want []float64
	}{
		{
			// Bounds 1, 3, 5, 8; six ends, three of them at 5 (a's end, b's
			// first segment's end and its second's start). Pieces at 100 W:
			//   [1,3] 200 J: a alone (10 tok/s)   → a 200
			//   [3,5] 200 J: a 10 tok/s, b 10     → a 100, b 100
			//   [5,8] 300 J: b alone              → b 300
			// a = 300, b = 400 (700 J = 100 W · 7 s on [1, 8]).
			name: "touching segments",
			reqs: []*record.Request{req("a", 1, 5, 40), b},
			want: []float64{300, 400},
		},
		{
			// TestAttributeUniformThreeOverlapping's requests and figures:
			// r1 = 920/3, r2 = 120, r3 = 1120/3; the failed, zero-length
			// and token-less requests get 0 and cut nothing.
			name: "three overlapping",
			reqs: []*record.Request{
				req("r1", 1, 5, 40), req("r2", 3, 7, 20), req("r3", 4, 9, 50),
				{ID: "failed", OK: false, FirstTokenAt: 2, DoneAt: 8, OutputTokens: 30},
				req("zero-length", 6, 6, 5), req("no-tokens", 2, 3, 0),
			},
			want: []float64{920.0 / 3, 120, 1120.0 / 3, 0, 0, 0},
		},
	}
	for _, c := range cases {
		for block := 1; block <= 7; block++ {
			got, err := pd.attributeBlocks(c.reqs, "trapz", shapesOf(c.reqs), nil, block)
			if err != nil {
				t.Fatalf("%s, block %d: %v", c.name, block, err)
			}
			for i, w := range c.want {
				if math.Abs(got[i]-w) > 1e-12*math.Max(1, w) {
					t.Errorf("%s, block %d: request %s got %v J, want %v", c.name, block, c.reqs[i].ID, got[i], w)
				}
			}
		}
	}
}

// Attribution a block at a time gives the all-at-once computation's
// figures bit for bit (attributeEnergyAllAtOnce, the code before blocks),
// or its error, on random runs whose ends often coincide (times on a
// grid, touching segments, many ends at one time), whatever the blocks:
// from one end each to all at once, in the requests' order and in
// another with the shapes indexed (as SteadyState calls it).
func TestAttributeBlocksMatchAllAtOnce(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 46))
		pd := mustPower(t, randomPower(rng, 2, 40))
		reqs := append(randomRequests(rng, 80, 1, 40), gridRequests(rng, 80, 2, 36)...)
		sl := shapesOf(reqs)
		perm := rng.Perm(len(reqs))
		order := make([]*record.Request, len(reqs))
		for i, j := range perm {
			order[i] = reqs[j]
		}
		for _, method := range []string{"trapz", "counter"} {
			for _, block := range []int{1, 2, 3, 5, 16, 100, attrBlock} {
				for _, c := range []struct {
					name string
					reqs []*record.Request
					idx  []int
				}{{"in order", reqs, nil}, {"indexed", order, perm}} {
					what := fmt.Sprintf("seed %d, %s, block %d, %s", seed, method, block, c.name)
					want, wantErr := pd.attributeEnergyAllAtOnce(c.reqs, method, sl, c.idx)
					got, err := pd.attributeBlocks(c.reqs, method, sl, c.idx, block)
					if fmt.Sprint(err) != fmt.Sprint(wantErr) {
						t.Fatalf("%s: error %v, all at once %v", what, err, wantErr)
					}
					for i := range want {
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
							t.Errorf("%s: request %d: %v J, all at once %v", what, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// gridRequests are n requests on [lo, hi] whose times are on a grid of
// 0.25 s, so that many share their ends, each generating on up to 8
// touching segments (token times on the grid, one chunk each).
func gridRequests(rng *rand.Rand, n int, lo, hi float64) []*record.Request {
	reqs := make([]*record.Request, n)
	for i := range reqs {
		first := lo + 0.25*float64(rng.IntN(int((hi-lo-4)*4)))
		done := first + 0.25*float64(1+rng.IntN(12))
		r := req(fmt.Sprintf("g%03d", i), first, done, 1+rng.IntN(100))
		for t := first + 0.25*float64(1+rng.IntN(3)); t < done; t += 0.25 * float64(1+rng.IntN(3)) {
			r.TokenTimes = append(r.TokenTimes, t)
		}
		reqs[i] = r
	}
	return reqs
}

// With blocks of one end, each distinct time of the ends is a block of
// its own: the plan cuts down to single keys, leaves none out and puts
// none twice.
func TestPlanBlocksOneEndEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 46))
	reqs := gridRequests(rng, 60, 2, 36)
	gens, nSegs, err := generating(reqs, shapesOf(reqs), nil)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[uint64]bool{}
	lo, hi := endKey(gens[0].first), endKey(gens[0].done)
	for _, g := range gens {
		lo, hi = min(lo, endKey(g.first)), max(hi, endKey(g.done))
		for _, sg := range g.segs() {
			ends[endKey(sg.a)], ends[endKey(sg.b)] = true, true
		}
	}
	ranges := planBlocks(gens, 2*nSegs, 1, lo, hi+1)
	if len(ranges) != len(ends) {
		t.Errorf("%d ranges for %d distinct ends", len(ranges), len(ends))
	}
	for i, r := range ranges {
		n := 0
		for k := range ends {
			if k >= r.lo && k < r.hi {
				n++
			}
		}
		if n != 1 || (i > 0 && r.lo < ranges[i-1].hi) {
			t.Errorf("range %d [%x, %x) holds %d distinct ends (want 1), or overlaps the one before", i, r.lo, r.hi, n)
		}
	}
}

// -0 and +0 are one bound: their ends have one key, so that no block
// edge falls between them.
func TestEndKeyZero(t *testing.T) {
	if endKey(math.Copysign(0, -1)) != endKey(0) {
		t.Errorf("endKey(-0) = %x, endKey(+0) = %x", endKey(math.Copysign(0, -1)), endKey(0))
	}
	if endKey(1.5) != orderKey(1.5) || endKey(-2) != orderKey(-2) {
		t.Error("endKey differs from orderKey on a number other than zero")
	}
}
