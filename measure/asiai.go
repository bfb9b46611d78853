package measure

import (
	"fmt"
	"math"
	"sort"
)

// tCritical975 holds the two-sided 95 % critical values of Student's t
// (the 0.975 quantile) for 1 to 30 degrees of freedom, as printed in every
// statistics table.
var tCritical975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// TCritical95 returns the 0.975 quantile of Student's t with df degrees of
// freedom: the table up to 30, beyond it the Cornish–Fisher expansion
// z + (z³ + z) / (4 df) with z = 1.959964 (within 0.002 of the exact value
// for df > 30). df < 1 is an error.
func TCritical95(df int) (float64, error) {
	if df < 1 {
		return 0, fmt.Errorf("t quantile: need at least 1 degree of freedom, got %d", df)
	}
	if df <= len(tCritical975) {
		return tCritical975[df-1], nil
	}
	const z = 1.959964
	return z + (z*z*z+z)/(4*float64(df)), nil
}

// MeanCI95 returns the half-width of the 95 % confidence interval of the
// mean of xs: t(0.975, n−1) · s / √n with s the sample standard deviation
// (n−1 denominator). Fewer than 2 values is an error.
func MeanCI95(xs []float64) (float64, error) {
	s, err := SampleStd(xs)
	if err != nil {
		return 0, fmt.Errorf("mean ci95: %w", err)
	}
	t, err := TCritical95(len(xs) - 1)
	if err != nil {
		return 0, err
	}
	return finiteResult("mean ci95", t*s/math.Sqrt(float64(len(xs))))
}

// PowerReadings counts the samples with a ≤ t ≤ b whose power is above
// zero, over every device. A source that reads 0 W where it has no reading
// (common with powermetrics on Apple Silicon) leaves a window with no
// reading at all: the caller says "not applicable" rather than dividing
// by a mean of zero.
func (p *PowerData) PowerReadings(a, b float64) int {
	if p == nil || math.IsNaN(a) || math.IsNaN(b) || a > b {
		return 0
	}
	n := 0
	for _, d := range p.devs {
		for i := sort.SearchFloat64s(d.t, a); i < len(d.t) && d.t[i] <= b; i++ {
			if d.p[i] > 0 {
				n++
			}
		}
	}
	return n
}
