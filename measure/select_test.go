package measure

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// sortedRanks is the reference for selectRanks: sort a copy (-0 before
// +0) and index it.
func sortedRanks(xs []float64, lo, hi int) (float64, float64) {
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b float64) int {
		switch {
		case a < b, a == b && math.Signbit(a) && !math.Signbit(b):
			return -1
		case a > b, a == b && !math.Signbit(a) && math.Signbit(b):
			return 1
		}
		return 0
	})
	return s[lo], s[hi]
}

func TestOrderKey(t *testing.T) {
	xs := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0,
		math.SmallestNonzeroFloat64, 1e-300, 0.02, 1, 1.0000000000000002, 1717405260.2896886, math.MaxFloat64, math.Inf(1)}
	for i, x := range xs {
		if y := keyFloat(orderKey(x)); math.Float64bits(y) != math.Float64bits(x) {
			t.Errorf("keyFloat(orderKey(%v)) = %v", x, y)
		}
		if i > 0 && orderKey(xs[i-1]) >= orderKey(x) {
			t.Errorf("orderKey(%v) >= orderKey(%v)", xs[i-1], x)
		}
	}
}

// selectRanks gives the elements a sort puts at the two ranks, on lists
// that take each of its ways: short (sorted), one bucket gathered, all
// 64 bits resolved (many equal values), and the upper rank past the
// gathered bucket or past the equal values.
func TestSelectRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := map[string]func(n int) []float64{
		"uniform": func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.Float64()
			}
			return xs
		},
		"itl-like": func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 0.02 + 0.01*rng.Float64()
			}
			return xs
		},
		"signed, zeros, extremes": func(n int) []float64 {
			pool := []float64{0, math.Copysign(0, -1), -1, 1, 1e-310, -1e-310, math.MaxFloat64, -math.MaxFloat64}
			xs := make([]float64, n)
			for i := range xs {
				if rng.IntN(4) == 0 {
					xs[i] = pool[rng.IntN(len(pool))]
				} else {
					xs[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
				}
			}
			return xs
		},
		"few distinct": func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(rng.IntN(3))
			}
			return xs
		},
		"all equal": func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 7.5
			}
			return xs
		},
		"two clusters": func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 1 + rng.Float64()
				if i%2 == 1 {
					xs[i] = 1000 + 1000*rng.Float64()
				}
			}
			return xs
		},
	}
	for name, g := range gen {
		for _, n := range []int{1, 2, 3, 100, selectSortMax, selectSortMax + 1, 50_000, 200_000} {
			xs := g(n)
			orig := slices.Clone(xs)
			ranks := []int{0, n - 1, (n - 1) / 2, n / 2, n/2 - 1, (n - 1) * 9 / 10, (n - 1) * 99 / 100}
			for range 5 {
				ranks = append(ranks, rng.IntN(n))
			}
			for _, lo := range ranks {
				lo = max(lo, 0)
				hi := min(lo+1, n-1)
				a, b, ok := selectRanks(xs, lo, hi)
				wa, wb := sortedRanks(xs, lo, hi)
				if !ok || math.Float64bits(a) != math.Float64bits(wa) || math.Float64bits(b) != math.Float64bits(wb) {
					t.Errorf("%s n=%d ranks %d,%d: got %v, %v; sorted %v, %v", name, n, lo, hi, a, b, wa, wb)
				}
				if a, _, _ := selectRanks(xs, lo, lo); math.Float64bits(a) != math.Float64bits(wa) {
					t.Errorf("%s n=%d rank %d alone: got %v; sorted %v", name, n, lo, a, wa)
				}
			}
			if !slices.Equal(xs, orig) {
				t.Fatalf("%s n=%d: input modified", name, n)
			}
		}
	}
}

// The upper rank past the bucket of the lower one, in the first pass and
// in a later one, and many equal keys. Hand-built: 5,000 ones then 5,000
// twos (ranks 4,999 and 5,000 are 1 and 2, apart in the top 16 bits);
// 1 and 1.0000001 likewise (the same top 32 bits); 5,000 values in
// [1, 2) and 5,000 in [1000, 2000): ranks 4,999 and 5,000 are the largest
// of the first and the smallest of the second.
func TestSelectRanksAcrossBuckets(t *testing.T) {
	xs := make([]float64, 10_000)
	for _, c := range []struct{ x, y float64 }{{1, 2}, {1, 1.0000001}} {
		for i := range xs {
			xs[i] = c.x
			if i%2 == 1 {
				xs[i] = c.y
			}
		}
		if a, b, ok := selectRanks(xs, 4999, 5000); !ok || a != c.x || b != c.y {
			t.Errorf("%v and %v: got %v, %v; want %v, %v", c.x, c.y, a, b, c.x, c.y)
		}
		if a, b, ok := selectRanks(xs, 5000, 5001); !ok || a != c.y || b != c.y {
			t.Errorf("%v and %v, ranks 5000, 5001: got %v, %v; want %v twice", c.x, c.y, a, b, c.y)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	lowMax, highMin := 0.0, math.Inf(1)
	for i := range xs {
		if i%2 == 0 {
			xs[i] = 1 + rng.Float64()
			lowMax = max(lowMax, xs[i])
		} else {
			xs[i] = 1000 + 1000*rng.Float64()
			highMin = min(highMin, xs[i])
		}
	}
	if a, b, ok := selectRanks(xs, 4999, 5000); !ok || a != lowMax || b != highMin {
		t.Errorf("two clusters: got %v, %v; want %v, %v", a, b, lowMax, highMin)
	}
}

// A NaN or infinity anywhere in a long list is found, and named by its
// index as checkFinite names it.
func TestPercentileLongListNotFinite(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Float64frombits(0xfff8000000000001)} {
		xs := make([]float64, 10_000)
		for i := range xs {
			xs[i] = float64(i)
		}
		xs[7000] = bad
		if _, err := Percentile(xs, 50); err == nil || !strings.Contains(err.Error(), "element 7000") {
			t.Errorf("%v at 7000: error %v; want one naming element 7000", bad, err)
		}
	}
}

// Percentile of a long list equals sorting: numpy's linear method on
// 0..n-1 shuffled gives pct/100·(n-1) exactly.
func TestPercentileLongList(t *testing.T) {
	const n = 100_001
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	rand.New(rand.NewPCG(5, 6)).Shuffle(n, func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	for _, c := range []struct{ pct, want float64 }{{0, 0}, {50, 50_000}, {90, 90_000}, {99, 99_000}, {99.9995, 99_999.5}, {100, 100_000}} {
		got, err := Percentile(xs, c.pct)
		if err != nil || got != c.want {
			t.Errorf("percentile %v: got %v, %v; want %v", c.pct, got, err, c.want)
		}
	}
}

// A bucket of more than copyMax keys (bucketCopyMax) is narrowed by a second count
// before it is copied: the ranks are still those of a sort, including
// when rank hi is the first key past the narrowed bucket, and with one
// part or several.
func TestSelectRanksNarrowsLargeBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	// 3·2^18 values in [1, 1.0625), the one bucket of keys 0xbff0 (sign,
	// exponent and the top 4 bits of the mantissa); a few ties. Narrowed
	// when more than 2^18.
	const copyMax = 1 << 18
	xs := make([]float64, 3*copyMax)
	for i := range xs {
		xs[i] = 1 + 0.0625*rng.Float64()
		if i%5 == 0 {
			xs[i] = 1.03125
		}
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	for _, procs := range []int{1, 3} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			sel := func(lo, hi int) (float64, float64, bool) {
				v := sliceValues(xs)
				v.copyMax = copyMax
				return selectRanksOf(v, lo, hi)
			}
			for range 40 {
				lo := rng.IntN(len(xs) - 1)
				a, b, ok := sel(lo, lo+1)
				if !ok || a != sorted[lo] || b != sorted[lo+1] {
					t.Fatalf("GOMAXPROCS %d: ranks %d, %d: %v, %v; sort %v, %v", procs, lo, lo+1, a, b, sorted[lo], sorted[lo+1])
				}
			}
			// The last key of a sub-bucket and the first of the next.
			for lo := range len(sorted) - 1 {
				if orderKey(sorted[lo])>>32 != orderKey(sorted[lo+1])>>32 {
					if a, b, _ := sel(lo, lo+1); a != sorted[lo] || b != sorted[lo+1] {
						t.Fatalf("across sub-buckets at %d: %v, %v; sort %v, %v", lo, a, b, sorted[lo], sorted[lo+1])
					}
					break
				}
			}
		}()
	}
}

// Several pairs of ranks found together from a fine count are those of a
// sort: pairs in the same fine bucket (its keys are then shared), a pair
// across two buckets, the first and last ranks, and a pair in a fine
// bucket too large to copy (found alone), with one part or several.
func TestSelectRankPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	// 200,000 values in [1, 2) (16 buckets of about 12,500, more than
	// selectSortMax, so that selectKeys reorders them), 10,000 in
	// [1000, 2000), and 20,000 copies of 1.5 (over copyMax in its bucket).
	const copyMax = 1 << 14
	var xs []float64
	for range 200_000 {
		xs = append(xs, 1+rng.Float64())
	}
	for range 10_000 {
		xs = append(xs, 1000+1000*rng.Float64())
	}
	for range 20_000 {
		xs = append(xs, 1.5)
	}
	rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	n := len(xs)
	// 219,999: the last value below 1000; 219,999 and 220,000 lie in two
	// buckets. 110,000: one of the copies of 1.5.
	ranks := [][2]int{{1000, 1001}, {219_999, 220_000}, {0, 1}, {n - 1, n - 1}, {50_000, 50_001}, {50_000, 50_000}, {110_000, 110_001}, {1100, 1101}, {4000, 4001}}
	for _, procs := range []int{1, 3} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			v := sliceValues(xs)
			v.copyMax = copyMax
			v.fine, v.hist = fineHists(v.parts)
			a, b, ok := selectRankPairs(v, ranks)
			if !ok {
				t.Fatalf("GOMAXPROCS %d: not ok", procs)
			}
			for i, r := range ranks {
				if a[i] != sorted[r[0]] || b[i] != sorted[r[1]] {
					t.Errorf("GOMAXPROCS %d: ranks %v: %v, %v; sort %v, %v", procs, r, a[i], b[i], sorted[r[0]], sorted[r[1]])
				}
			}
		}()
	}
	xs[7] = math.Inf(1)
	v := sliceValues(xs)
	if _, _, ok := selectRankPairs(v, ranks); ok {
		t.Errorf("with +Inf: ok")
	}
	v.fine, v.hist = fineHists(v.parts)
	if _, _, ok := selectRankPairs(v, ranks); ok {
		t.Errorf("with +Inf, fine count: ok")
	}
}

// sortedDistinct gives what slices.Sort and slices.Compact give: long
// lists of run times (which share their high bytes), of mixed signs and
// magnitudes, with ties, -0 beside +0, and short lists.
func TestSortedDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for _, c := range []struct {
		name string
		n    int
		gen  func() float64
	}{
		{"times", 100_000, func() float64 { return 1.7e9 + 3600*rng.Float64() }},
		{"mixed", 50_000, func() float64 { return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20)) }},
		{"ties", 20_000, func() float64 { return float64(rng.IntN(50)) - 25 }},
		{"short", 100, func() float64 { return rng.NormFloat64() }},
		{"one value", 10_000, func() float64 { return 3 }},
		{"zeros", 10_000, func() float64 { return []float64{math.Copysign(0, -1), 0, 1}[rng.IntN(3)] }},
		{"short zeros", 10, func() float64 { return []float64{math.Copysign(0, -1), 0}[rng.IntN(2)] }},
	} {
		xs := make([]float64, c.n)
		keys := make([]uint64, c.n)
		for i := range xs {
			xs[i] = c.gen()
			keys[i] = orderKey(xs[i])
		}
		want := slices.Compact(slices.Sorted(slices.Values(xs)))
		if got := sortedDistinct(keys); !slices.Equal(got, want) {
			t.Errorf("%s: %d numbers, slices.Sort and Compact give %d", c.name, len(got), len(want))
		}
	}
}
