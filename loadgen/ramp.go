package loadgen

import (
	"fmt"
	"math"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Ramp sends at a rate that rises (or falls) linearly over the stage from
// ramp_start_rate to ramp_end_rate (RampArrivals): exact times, no
// randomness.
const Ramp Mode = "ramp"

var rampKind = ShapeKind{
	Mode:   Ramp,
	Doc:    "a rate linear in time from ramp_start_rate to ramp_end_rate",
	Params: openParams(ParamRampStartRate, ParamRampEndRate),
	Decode: func(c Config) (Shape, error) {
		cp, err := decodeCap(c)
		if err != nil {
			return nil, err
		}
		r0, r1 := c.RampStartRate, c.RampEndRate
		finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
		if !finite(r0) || !finite(r1) || r0 < 0 || r1 < 0 || !(r0+r1 > 0) {
			return nil, fmt.Errorf("mode %s needs ramp_start_rate and ramp_end_rate finite, >= 0 and not both 0 (requests/s), got %v and %v", Ramp, r0, r1)
		}
		return rampShape{cp, r0, r1}, nil
	},
}

type rampShape struct {
	openCap
	r0, r1 float64
}

// Record writes both rates whatever they are: a ramp may start (or end)
// at 0.
func (s rampShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Ramp), RampStartRate: &s.r0, RampEndRate: &s.r1, MaxConcurrency: s.max}
}

func (s rampShape) Schedule(n int) []time.Duration { return RampArrivals(n, s.r0, s.r1) }

// RampArrivals returns the send offsets of n requests whose rate rises (or
// falls) linearly in time from r0 at the first send to r1 at
// T = 2n / (r0 + r1), when an (n+1)-th request would go: λ(t) = r0 + k·t
// with k = (r1 − r0) / T, so that its integral Λ(T) = n. Request i goes at
// the t where Λ(t) = r0·t + k·t²/2 = i:
//
//	t_i = 2i / (r0 + √(r0² + 2k·i))
//
// (the root of the quadratic written without the cancellation of
// (−r0 + √…)/k; it is i / r0 when k = 0). r0 and r1 are >= 0, not both 0.
func RampArrivals(n int, r0, r1 float64) []time.Duration {
	out := make([]time.Duration, n)
	if n == 0 {
		return out
	}
	k := (r1 - r0) * (r0 + r1) / (2 * float64(n)) // (r1 − r0) / T
	for i := 1; i < n; i++ {
		x := float64(i)
		out[i] = seconds(2 * x / (r0 + math.Sqrt(r0*r0+2*k*x)))
	}
	return out
}
