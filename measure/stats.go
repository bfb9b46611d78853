package measure

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Statistics on lists of numbers. Every function rejects an empty list and
// NaN or infinite elements with an error, and returns an error rather than a
// NaN or infinite result.

func checkFinite(name string, xs []float64) error {
	return checkFiniteOf(name, len(xs), sliceChunks(xs))
}

// checkFiniteOf is checkFinite of the n values that all yields.
func checkFiniteOf(name string, n int, all chunks) error {
	if n == 0 {
		return fmt.Errorf("%s: empty list", name)
	}
	i := 0
	for xs := range all {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: element %d is %v", name, i, x)
			}
			i++
		}
	}
	return nil
}

func finiteResult(name string, v float64) (float64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: result is %v (overflow)", name, v)
	}
	return v, nil
}

// meanVar returns the mean and the population variance (two-pass, with the
// compensating term of the corrected two-pass algorithm). xs is non-empty.
func meanVar(xs []float64) (mean, variance float64) {
	n := float64(len(xs))
	s := 0.0
	for _, x := range xs {
		s += x
	}
	mean = s / n
	var ss, c float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
		c += d
	}
	variance = max(0, (ss-c*c/n)/n)
	return mean, variance
}

// Mean returns the arithmetic mean.
func Mean(xs []float64) (float64, error) {
	if err := checkFinite("mean", xs); err != nil {
		return 0, err
	}
	m, _ := meanVar(xs)
	return finiteResult("mean", m)
}

// Percentile returns the pct-th percentile (0 ≤ pct ≤ 100) with linear
// interpolation between the closest ranks (numpy's default "linear"):
// rank = pct/100·(n-1) in the sorted list. xs is not modified, and not
// copied when it is long: the two ranks are found by selection (select.go),
// which gives the elements a sort would put there (-0 before +0).
func Percentile(xs []float64, pct float64) (float64, error) {
	return percentileOf(sliceValues(xs), pct)
}

// percentileOf is Percentile of v.
func percentileOf(v values, pct float64) (float64, error) {
	n, all := v.n, v.all
	if n == 0 {
		return 0, checkFiniteOf("percentile", 0, all)
	}
	if math.IsNaN(pct) || pct < 0 || pct > 100 {
		if err := checkFiniteOf("percentile", n, all); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("percentile: %v is outside [0, 100]", pct)
	}
	lo, hi, f := percentileRanks(n, pct)
	a, b, ok := selectRanksOf(v, lo, hi)
	if !ok {
		return 0, checkFiniteOf("percentile", n, all) // the first non-finite element
	}
	return interpolate(a, b, f)
}

// percentileRanks returns the two ranks (0-based) between which the
// pct-th percentile of n values lies, and the fraction of the way.
func percentileRanks(n int, pct float64) (lo, hi int, f float64) {
	rank := pct / 100 * float64(n-1)
	lo = int(math.Floor(rank))
	hi = min(lo+1, n-1)
	return lo, hi, rank - float64(lo)
}

// interpolate is the percentile f of the way from a to b.
func interpolate(a, b, f float64) (float64, error) {
	x := a
	if f > 0 {
		x = a + (b-a)*f
	}
	return finiteResult("percentile", x)
}

// percentile is a result of percentilesOf.
type percentile struct {
	x   float64
	err error
}

// percentilesOf is percentileOf(v, pct) for each of pcts, with the ranks
// of all found together (selectRankPairs): two passes over the values in
// all instead of two for each.
func percentilesOf(v values, pcts []float64) []percentile {
	out := make([]percentile, len(pcts))
	var idx []int // of the pcts in range, and their ranks
	var ranks [][2]int
	var fs []float64
	for i, pct := range pcts {
		if v.n == 0 || math.IsNaN(pct) || pct < 0 || pct > 100 {
			out[i].x, out[i].err = percentileOf(v, pct)
			continue
		}
		lo, hi, f := percentileRanks(v.n, pct)
		idx, ranks, fs = append(idx, i), append(ranks, [2]int{lo, hi}), append(fs, f)
	}
	if len(idx) == 0 {
		return out
	}
	as, bs, ok := selectRankPairs(v, ranks)
	if !ok {
		err := checkFiniteOf("percentile", v.n, v.all) // the first non-finite element
		for _, i := range idx {
			out[i].err = err
		}
		return out
	}
	for j, i := range idx {
		out[i].x, out[i].err = interpolate(as[j], bs[j], fs[j])
	}
	return out
}

// Median is Percentile(xs, 50).
func Median(xs []float64) (float64, error) {
	v, err := Percentile(xs, 50)
	if err != nil {
		return 0, fmt.Errorf("median: %w", err)
	}
	return v, nil
}

// Std returns the population standard deviation.
func Std(xs []float64) (float64, error) {
	if err := checkFinite("std", xs); err != nil {
		return 0, err
	}
	_, v := meanVar(xs)
	return finiteResult("std", math.Sqrt(v))
}

// SampleStd returns the sample standard deviation (n-1 denominator); n < 2
// is an error.
func SampleStd(xs []float64) (float64, error) {
	if err := checkFinite("sample std", xs); err != nil {
		return 0, err
	}
	if len(xs) < 2 {
		return 0, fmt.Errorf("sample std: need at least 2 values, got %d", len(xs))
	}
	_, v := meanVar(xs)
	n := float64(len(xs))
	return finiteResult("sample std", math.Sqrt(v*n/(n-1)))
}

// CV returns the coefficient of variation: population std / mean. A zero
// mean is an error.
func CV(xs []float64) (float64, error) {
	if err := checkFinite("cv", xs); err != nil {
		return 0, err
	}
	m, v := meanVar(xs)
	if m == 0 {
		return 0, fmt.Errorf("cv: mean is 0")
	}
	return finiteResult("cv", math.Sqrt(v)/m)
}

// PooledStd returns the pooled intra-group standard deviation of asiai M8:
// for each group with at least 2 values its population variance, the mean
// of those variances, and the square root. Groups with one value are
// ignored; no group with 2 or more values is an error, and so is a length
// mismatch between values and groups.
func PooledStd(values []float64, groups []string) (float64, error) {
	if len(values) != len(groups) {
		return 0, fmt.Errorf("pooled std: %d values but %d groups", len(values), len(groups))
	}
	if err := checkFinite("pooled std", values); err != nil {
		return 0, err
	}
	byGroup := map[string][]float64{}
	order := []string{}
	for i, g := range groups {
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], values[i])
	}
	sum, k := 0.0, 0
	for _, g := range order {
		vs := byGroup[g]
		if len(vs) < 2 {
			continue
		}
		_, v := meanVar(vs)
		sum += v
		k++
	}
	if k == 0 {
		return 0, fmt.Errorf("pooled std: no group has 2 or more values")
	}
	return finiteResult("pooled std", math.Sqrt(sum/float64(k)))
}

// Ranks returns 1-based ranks; tied values get the mean of the ranks they
// span. (NaN sorts before every number and ties with NaN.)
func Ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && cmp.Compare(xs[idx[j]], xs[idx[i]]) == 0 {
			j++
		}
		// positions i..j-1 hold ranks i+1..j; their mean is (i+1+j)/2
		avg := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			r[idx[k]] = avg
		}
		i = j
	}
	return r
}

// Spearman returns Spearman's rank correlation: the Pearson correlation of
// the average ranks. Lists of different length, fewer than 2 values, or a
// constant list are errors.
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return 0, fmt.Errorf("spearman: lists differ in length (%d and %d)", len(x), len(y))
	}
	if err := checkFinite("spearman", x); err != nil {
		return 0, err
	}
	if err := checkFinite("spearman", y); err != nil {
		return 0, err
	}
	if len(x) < 2 {
		return 0, fmt.Errorf("spearman: need at least 2 pairs, got %d", len(x))
	}
	rx, ry := Ranks(x), Ranks(y)
	mx, _ := meanVar(rx)
	my, _ := meanVar(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, fmt.Errorf("spearman: a list is constant, correlation undefined")
	}
	rho := sxy / math.Sqrt(sxx*syy)
	return finiteResult("spearman", max(-1, min(1, rho)))
}
