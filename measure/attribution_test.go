package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// flat100 is one device at a constant 100 W on [0, 10] (plus a sample in
// the middle), so a piece of length L holds 100·L J.
func flat100(t *testing.T) *PowerData {
	return mustPower(t, []record.PowerSample{ps("gpu0", 0, 100), ps("gpu0", 5, 100), ps("gpu0", 10, 100)})
}

func req(id string, first, done float64, tokens int) *record.Request {
	return &record.Request{ID: id, Phase: "formal", OK: true, SentAt: first - 0.1, FirstTokenAt: first, DoneAt: done, OutputTokens: tokens}
}

func checkAttr(t *testing.T, got []Attribution, want []Attribution) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d attributions, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || !near(g.EnergyJ, w.EnergyJ) || !near(g.Tokens, w.Tokens) || !near(g.JPerToken, w.JPerToken) {
			t.Errorf("[%d] got %+v, want %+v", i, g, w)
		}
	}
}

func TestAttributeUniformThreeOverlapping(t *testing.T) {
	pd := flat100(t)
	reqs := []*record.Request{
		req("r1", 1, 5, 40), // 10 tok/s
		req("r2", 3, 7, 20), // 5 tok/s
		req("r3", 4, 9, 50), // 10 tok/s
		{ID: "failed", OK: false, FirstTokenAt: 2, DoneAt: 8, OutputTokens: 30},
		req("zero-length", 6, 6, 5),
		req("no-tokens", 2, 3, 0),
	}
	got, err := pd.Attribute(reqs, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	// Boundaries 1, 3, 4, 5, 7, 9 (the zero-length and failed requests cut
	// nothing). Pieces at 100 W:
	//   [1,3] 200 J: r1 alone                           → r1 200
	//   [3,4] 100 J: r1 10 tok, r2 5 tok (15)           → r1 200/3, r2 100/3
	//   [4,5] 100 J: r1 10, r2 5, r3 10 (25)            → r1 40, r2 20, r3 40
	//   [5,7] 200 J: r2 10, r3 20 (30)                  → r2 200/3, r3 400/3
	//   [7,9] 200 J: r3 alone                           → r3 200
	// r1 = 200 + 200/3 + 40 = 920/3; J/token 920/3/40 = 23/3
	// r2 = 100/3 + 20 + 200/3 = 120; J/token 120/20 = 6
	// r3 = 40 + 400/3 + 200 = 1120/3; J/token 1120/3/50 = 112/15
	// sum 920/3 + 360/3 + 1120/3 = 800 = 100 W · 8 s on [1, 9]
	checkAttr(t, got, []Attribution{
		{"r1", 920.0 / 3, 40, 23.0 / 3},
		{"r2", 120, 20, 6},
		{"r3", 1120.0 / 3, 50, 112.0 / 15},
		{"failed", 0, 0, 0},
		{"zero-length", 0, 5, 0},
		{"no-tokens", 0, 0, 0},
	})
}

func TestAttributeTokenTimes(t *testing.T) {
	pd := flat100(t)
	a := req("A", 0, 4, 4)
	a.TokenTimes = []float64{0, 1, 2, 4} // 1 token each
	b := req("B", 2, 6, 6)
	b.TokenTimes = []float64{2, 3, 6.5} // last chunk after DoneAt: clamped to 6
	b.TokenCounts = []int{1, 1, 1}      // scaled ×2 to total 6
	c := req("C", 1, 5, 8)              // uniform, 2 tok/s
	got, err := pd.Attribute([]*record.Request{a, b, c}, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	// Each chunk's tokens were generated since the previous chunk (the
	// first since the interval start); a chunk with no time since the
	// previous one carries its tokens to the next.
	// A [0,4], 1 token per chunk at 0, 1, 2, 4:
	//   chunk t=0 has no time → carried; [0,1] 2 tokens (2/s), [1,2] 1 (1/s), [2,4] 1 (0.5/s).
	// B [2,6], chunks at 2, 3, 6.5 → 6, each 1 scaled ×2 = 2 tokens:
	//   t=2 carried; [2,3] 4 tokens (4/s), [3,6] 2 tokens (2/3 /s).
	// C [1,5] uniform 8 tokens: 2/s.
	// Pieces at 100 W (100 J each), split by token rate:
	//   [0,1]: A 2                     → A 100
	//   [1,2]: A 1, C 2 (3)            → A 100/3, C 200/3
	//   [2,3]: A 0.5, B 4, C 2 (6.5)   → A 100/13, B 800/13, C 400/13
	//   [3,4]: A 0.5, B 2/3, C 2 (19/6) → A 300/19, B 400/19, C 1200/19
	//   [4,5]: B 2/3, C 2 (8/3)        → B 25, C 75
	//   [5,6]: B alone                 → B 100
	// A = 100 + 100/3 + 100/13 + 300/19
	// B = 800/13 + 400/19 + 125
	// C = 200/3 + 400/13 + 1200/19 + 75
	// sum = 600 = 100 W · 6 s
	ea := 100 + 100.0/3 + 100.0/13 + 300.0/19
	eb := 800.0/13 + 400.0/19 + 125
	ec := 200.0/3 + 400.0/13 + 1200.0/19 + 75
	checkAttr(t, got, []Attribution{
		{"A", ea, 4, ea / 4},
		{"B", eb, 6, eb / 6},
		{"C", ec, 8, ec / 8},
	})

	// All chunk counts 0: the request falls back to uniform. With B alone
	// over [2,6] it gets all of 400 J either way; with C it shares by rate:
	// C [1,5] 2 tok/s, B [2,6] 1.5 tok/s. Pieces [1,2] 100 J C alone;
	// [2,5] 300 J: C 6, B 4.5 → C 300·6/10.5 = 1200/7, B 900/7; [5,6] B 100.
	// B = 900/7 + 100 = 1600/7; C = 100 + 1200/7 = 1900/7.
	b0 := req("B0", 2, 6, 6)
	b0.TokenTimes = []float64{2, 3, 6}
	b0.TokenCounts = []int{0, 0, 0}
	got, err = pd.Attribute([]*record.Request{b0, c}, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	checkAttr(t, got, []Attribution{{"B0", 1600.0 / 7, 6, 1600.0 / 42}, {"C", 1900.0 / 7, 8, 1900.0 / 56}})
}

func TestAttributeTokensSincePreviousChunk(t *testing.T) {
	pd := flat100(t)
	p := req("P", 0, 4, 4)
	p.TokenTimes = []float64{0.5, 1} // 2 tokens each
	q := req("Q", 2, 6, 6)
	q.TokenTimes = []float64{5, 6} // 3 tokens each
	got, err := pd.Attribute([]*record.Request{p, q}, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	// P: [0,0.5] 2 tokens, [0.5,1] 2 tokens, nothing on [1,4].
	// Q: [2,5] 3 tokens, [5,6] 3 tokens.
	//   [0,1] 100 J: P alone → P 100
	//   [1,2] 100 J: nobody generates → unattributed
	//   [2,6] 400 J: Q alone → Q 400
	// P = 100 (25 J/token), Q = 400 (400/6 = 200/3 J/token).
	checkAttr(t, got, []Attribution{{"P", 100, 4, 25}, {"Q", 400, 6, 200.0 / 3}})
}

func TestAttributeNobodyGeneratingStaysUnattributed(t *testing.T) {
	pd := flat100(t)
	// Two disjoint requests: [1,2] and [6,8]; the gap [2,6] is nobody's.
	got, err := pd.Attribute([]*record.Request{req("x", 1, 2, 10), req("y", 6, 8, 10)}, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	// x: 100 J, 10 J/token; y: 200 J, 20 J/token. 300 of 700 J attributed.
	checkAttr(t, got, []Attribution{{"x", 100, 10, 10}, {"y", 200, 10, 20}})
}

// In a list long enough for its shapes to be found on several cores,
// the error reported is that of the first bad request, whichever part
// found it.
func TestAttributeFirstErrorOfParts(t *testing.T) {
	pd := flat100(t)
	for _, bad := range [][]int{{9000}, {5, 9000}, {4000, 4500}} {
		reqs := make([]*record.Request, 3*shapesMin)
		for i := range reqs {
			reqs[i] = req(fmt.Sprintf("r%d", i), 1, 2, 3)
		}
		for _, i := range bad {
			reqs[i] = req(fmt.Sprintf("r%d", i), 3, 2, 3) // done before first token
		}
		_, err := pd.Attribute(reqs, "trapz")
		wantErr(t, err, fmt.Sprintf("request %d (\"r%d\")", bad[0], bad[0]), "before first_token_at")
		_, err = RequestsIn(reqs, 0, 10)
		wantErr(t, err, fmt.Sprintf("request r%d:", bad[0]))
	}
}

func TestAttributeErrors(t *testing.T) {
	pd := flat100(t)
	mismatch := req("m", 1, 2, 3)
	mismatch.TokenTimes = []float64{1, 2}
	mismatch.TokenCounts = []int{1}
	negCount := req("n", 1, 2, 3)
	negCount.TokenTimes = []float64{1, 2}
	negCount.TokenCounts = []int{1, -1}
	nanTime := req("nt", 1, 2, 3)
	nanTime.TokenTimes = []float64{1, math.NaN()}
	cases := []struct {
		name   string
		reqs   []*record.Request
		method string
		want   []string
	}{
		{"unknown method", []*record.Request{req("a", 1, 2, 3)}, "exact", []string{`"exact"`}},
		{"unknown method, no requests", nil, "bogus", []string{`"bogus"`}},
		{"counter without counter", []*record.Request{req("a", 1, 2, 3)}, "counter", []string{"gpu0", "counter"}},
		{"nil request", []*record.Request{req("a", 1, 2, 3), nil}, "trapz", []string{"request 1 is nil"}},
		{"done before first token", []*record.Request{req("a", 3, 2, 3)}, "trapz", []string{`"a"`, "before first_token_at"}},
		{"NaN time", []*record.Request{req("a", math.NaN(), 2, 3)}, "trapz", []string{`"a"`}},
		{"negative tokens", []*record.Request{req("a", 1, 2, -3)}, "trapz", []string{`"a"`, "negative"}},
		{"outside power data", []*record.Request{req("a", 1, 2, 3), req("late", 9, 11, 3)}, "trapz",
			[]string{`"late"`, `"gpu0"`, "[9, 11]", "[0, 10]"}},
		{"token_counts mismatch", []*record.Request{mismatch}, "trapz", []string{`"m"`, "token_counts"}},
		{"negative token count", []*record.Request{negCount}, "trapz", []string{`"n"`, "negative"}},
		{"NaN token time", []*record.Request{nanTime}, "trapz", []string{`"nt"`, "token_times[1]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := pd.Attribute(c.reqs, c.method)
			if got != nil {
				t.Error("result with error")
			}
			wantErr(t, err, c.want...)
		})
	}
}

// bruteSegments cuts a request's generation into uniform segments by the
// rule in Attribute's comment, written out directly.
func bruteSegments(r *record.Request) [][3]float64 {
	whole := [][3]float64{{r.FirstTokenAt, r.DoneAt, float64(r.OutputTokens)}}
	sum := 0.0
	type ch struct{ t, w float64 }
	var cs []ch
	for j, ct := range r.TokenTimes {
		w := 1.0
		if r.TokenCounts != nil {
			w = float64(r.TokenCounts[j])
		}
		cs = append(cs, ch{math.Min(math.Max(ct, r.FirstTokenAt), r.DoneAt), w})
		sum += w
	}
	if len(cs) == 0 || sum == 0 {
		return whole
	}
	for i := 1; i < len(cs); i++ { // stable insertion sort by time
		for j := i; j > 0 && cs[j].t < cs[j-1].t; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	// groups of ⌈K/maxSegments⌉ consecutive chunks end at their last chunk
	per := (len(cs) + maxSegments - 1) / maxSegments
	var segs [][3]float64
	prev, carry := r.FirstTokenAt, 0.0
	for k, c := range cs {
		carry += c.w * float64(r.OutputTokens) / sum
		if (k+1)%per != 0 && k != len(cs)-1 {
			continue // not the last chunk of its group
		}
		if c.t > prev && carry > 0 {
			segs = append(segs, [3]float64{prev, c.t, carry})
			prev, carry = c.t, 0
		}
	}
	if len(segs) == 0 {
		return whole
	}
	segs[len(segs)-1][2] += carry
	return segs
}

// bruteAttribute is a direct quadratic implementation of the attribution
// rule, used to check Attribute's sweep on random data.
func bruteAttribute(t *testing.T, pd *PowerData, reqs []*record.Request, method string) []float64 {
	var bounds []float64
	segs := make([][][3]float64, len(reqs))
	for i, r := range reqs {
		if r.OK && r.OutputTokens > 0 && r.DoneAt > r.FirstTokenAt {
			segs[i] = bruteSegments(r)
			for _, sg := range segs[i] {
				bounds = append(bounds, sg[0], sg[1])
			}
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	out := make([]float64, len(reqs))
	for m := 0; m+1 < len(bounds); m++ {
		a, b := bounds[m], bounds[m+1]
		e, err := pd.Energy(a, b, method)
		if err != nil {
			t.Fatal(err)
		}
		tok := make([]float64, len(reqs))
		total := 0.0
		for i := range reqs {
			for _, sg := range segs[i] {
				if lo, hi := math.Max(sg[0], a), math.Min(sg[1], b); hi > lo {
					tok[i] += sg[2] * (hi - lo) / (sg[1] - sg[0])
				}
			}
			total += tok[i]
		}
		if total == 0 {
			continue // nobody generates: unattributed
		}
		for i := range reqs {
			out[i] += e * tok[i] / total
		}
	}
	return out
}

func randomRequests(rng *rand.Rand, n int, lo, hi float64) []*record.Request {
	reqs := make([]*record.Request, n)
	for i := range reqs {
		first := lo + rng.Float64()*(hi-lo-4)
		// snap some times to a coarse grid so that boundaries coincide
		if rng.IntN(3) == 0 {
			first = math.Round(first)
		}
		done := first + 0.2 + rng.Float64()*3
		if rng.IntN(3) == 0 && math.Round(done) > first {
			done = math.Round(done)
		}
		r := req("q"+string(rune('A'+i%26))+string(rune('a'+i/26)), first, done, 1+rng.IntN(200))
		switch rng.IntN(8) {
		case 0:
			r.OK = false
		case 1:
			r.DoneAt = r.FirstTokenAt // zero-length
		case 2, 3, 4:
			k := 1 + rng.IntN(40)
			for range k {
				// some chunks slightly outside the interval
				r.TokenTimes = append(r.TokenTimes, first-0.1+rng.Float64()*(done-first+0.2))
			}
			if rng.IntN(2) == 0 {
				slices.Sort(r.TokenTimes) // in order, as streamed
			}
			if rng.IntN(2) == 0 {
				for range k {
					r.TokenCounts = append(r.TokenCounts, rng.IntN(5))
				}
			}
		}
		reqs[i] = r
	}
	return reqs
}

func TestAttributeMatchesBruteForce(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 99))
		pd := mustPower(t, randomPower(rng, 2, 40))
		reqs := randomRequests(rng, 120, 1, 40)
		for _, method := range []string{"trapz", "counter"} {
			got, err := pd.Attribute(reqs, method)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteAttribute(t, pd, reqs, method)
			sum := 0.0
			for i := range reqs {
				if math.Abs(got[i].EnergyJ-want[i]) > 1e-9*math.Max(1, want[i]) {
					t.Errorf("seed %d %s request %d: got %v, brute force %v", seed, method, i, got[i].EnergyJ, want[i])
				}
				sum += got[i].EnergyJ
			}
			// Energy conservation: the attributed total equals the energy of
			// the union of the times in which some request generates.
			union := unionEnergy(t, pd, reqs, method)
			if math.Abs(sum-union) > 1e-9*union {
				t.Errorf("seed %d %s: attributed %v, energy of the generating time %v", seed, method, sum, union)
			}
		}
	}
}

func unionEnergy(t *testing.T, pd *PowerData, reqs []*record.Request, method string) float64 {
	// fine grid check of the union, by merging intervals sorted by start
	type iv struct{ a, b float64 }
	var ivs []iv
	for _, r := range reqs {
		if r.OK && r.OutputTokens > 0 && r.DoneAt > r.FirstTokenAt {
			for _, sg := range bruteSegments(r) { // a request generates on its segments
				ivs = append(ivs, iv{sg[0], sg[1]})
			}
		}
	}
	for i := 1; i < len(ivs); i++ {
		for j := i; j > 0 && ivs[j].a < ivs[j-1].a; j-- {
			ivs[j], ivs[j-1] = ivs[j-1], ivs[j]
		}
	}
	total := 0.0
	cur := ivs[0]
	flush := func() {
		e, err := pd.Energy(cur.a, cur.b, method)
		if err != nil {
			t.Fatal(err)
		}
		total += e
	}
	for _, x := range ivs[1:] {
		if x.a <= cur.b {
			cur.b = math.Max(cur.b, x.b)
			continue
		}
		flush()
		cur = x
	}
	flush()
	return total
}

func TestAttributeLongStreamGrouped(t *testing.T) {
	pd := flat100(t)
	// 130 chunks of 1 token, one every 0.05 s from 1.05 to 7.5, on [1, 9]:
	// grouped into ⌈130/8⌉ = 17 chunks per segment (7 groups of 17 and one
	// of 11: 8 segments), all the
	// time from 1 to the last chunk at 7.5 is generating, 7.5 → 9 is not.
	r := req("long", 1, 9, 130)
	for k := 1; k <= 130; k++ {
		r.TokenTimes = append(r.TokenTimes, 1+0.05*float64(k))
	}
	sh, err := shapeOf(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sh.segs()); n != 8 || n > maxSegments {
		t.Errorf("%d segments, want 8 (≤ %d)", n, maxSegments)
	}
	got, err := pd.Attribute([]*record.Request{r}, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	// Alone, it gets 100 W × (7.5 - 1) s = 650 J for 130 tokens: 5 J/token.
	checkAttr(t, got, []Attribution{{"long", 650, 130, 5}})
}

// inOrder lets only in-order times inside the interval take shapeOf's
// short way; anything to clamp, sort or reject takes the general loop.
func TestInOrder(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		ts   []float64
		want bool
	}{
		{nil, true}, {[]float64{1, 1, 2, 3}, true}, {[]float64{1, 3}, true},
		{[]float64{0.5, 2}, false}, {[]float64{1, 3.5}, false}, {[]float64{2, 1.5}, false},
		{[]float64{1, nan}, false}, {[]float64{inf}, false}, {[]float64{-inf}, false},
	} {
		if got := inOrder(c.ts, 1, 3); got != c.want {
			t.Errorf("inOrder(%v, 1, 3) = %v; want %v", c.ts, got, c.want)
		}
	}
}
