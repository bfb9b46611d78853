package loadgen

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Gamma sends with gamma-distributed gaps of shape burstiness and mean
// 1 / rate, as vLLM's bench serve --burstiness defines them: burstiness 1
// is Poisson (and is run and recorded as Poisson), below 1 burstier (the
// gaps' CV is 1/√burstiness), above 1 more regular.
const Gamma Mode = "gamma"

var gammaKind = ShapeKind{
	Mode:   Gamma,
	Doc:    "gamma gaps of mean 1 / rate and shape burstiness (vLLM's)",
	Role:   RoleBurstyRate,
	Params: openParams(ParamRate, ParamBurstiness),
	Decode: func(c Config) (Shape, error) {
		cp, err := decodeCap(c)
		if err != nil {
			return nil, err
		}
		rate, err := decodeRate(c)
		if err != nil {
			return nil, err
		}
		if b := c.burstiness(); b != 1 {
			return gammaShape{cp, rate, b, c.Seed}, nil
		}
		return poissonShape{cp, rate, c.Seed}, nil
	},
}

type gammaShape struct {
	openCap
	rate, burstiness float64
	seed             int64
}

func (s gammaShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Gamma), Rate: s.rate, Burstiness: s.burstiness, MaxConcurrency: s.max}
}

func (s gammaShape) Schedule(n int) []time.Duration {
	return GammaArrivals(n, s.rate, s.burstiness, s.seed)
}

// GammaArrivals returns the send offsets of n requests whose gaps are
// gamma-distributed with shape burstiness and mean 1 / rate (scale
// 1 / (rate · burstiness)), as vLLM's bench serve draws them; the first
// request is sent at once. The draws come from a PCG generator seeded with
// seed through the method written here (Marsaglia and Tsang's, with
// Box–Muller normals), so a seed always gives the same schedule whatever
// the Go version. A rate of +Inf gives all zeros.
//
// Unlike vLLM (0.10 and later), the first request is not delayed by a gap
// and the schedule is not rescaled to end at exactly n / rate: the gaps
// are a renewal process, as the Poisson mode's are.
func GammaArrivals(n int, rate, burstiness float64, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	g := gammaSource{src: rand.NewPCG(uint64(seed), 0x67616d6d61)} // "gamma"
	scale := 1 / (rate * burstiness)
	t := 0.0
	for i := 1; i < n; i++ {
		t += g.next(burstiness) * scale
		out[i] = seconds(t)
	}
	return out
}

// gammaSource draws gamma variates of scale 1 from a PCG generator.
type gammaSource struct{ src *rand.PCG }

// uniform returns a uniform variate in (0, 1].
func (g gammaSource) uniform() float64 {
	return float64(g.src.Uint64()>>11+1) / (1 << 53)
}

// normal returns a standard normal variate (Box–Muller, one of the pair).
func (g gammaSource) normal() float64 {
	u1, u2 := g.uniform(), g.uniform()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// next returns a Gamma(a, 1) variate, a > 0: Marsaglia and Tsang, "A
// simple method for generating gamma variables" (ACM TOMS 26(3), 2000),
// with their boost for a < 1: Gamma(a) = Gamma(a+1) · U^(1/a).
func (g gammaSource) next(a float64) float64 {
	boost := 1.0
	if a < 1 {
		boost = math.Pow(g.uniform(), 1/a)
		a++
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := g.normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := g.uniform()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * boost
		}
	}
}
