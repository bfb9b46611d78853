package loadgen

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Poisson sends with exponential gaps of mean 1 / rate (Arrivals), drawn
// from a generator seeded with Config.Seed.
const Poisson Mode = "poisson"

var poissonKind = ShapeKind{
	Mode:   Poisson,
	Doc:    "exponential gaps of mean 1 / rate",
	Role:   RoleRate,
	Params: openParams(ParamRate),
	Decode: func(c Config) (Shape, error) {
		cp, err := decodeCap(c)
		if err != nil {
			return nil, err
		}
		rate, err := decodeRate(c)
		return poissonShape{cp, rate, c.Seed}, err
	},
}

type poissonShape struct {
	openCap
	rate float64
	seed int64
}

func (s poissonShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Poisson), Rate: s.rate, MaxConcurrency: s.max}
}

func (s poissonShape) Schedule(n int) []time.Duration { return Arrivals(n, s.rate, s.seed) }

// Arrivals returns the send offsets of n requests arriving as a Poisson
// process of the given rate (requests per second): cumulative exponential
// gaps drawn from a PCG generator seeded with seed, so a seed always gives
// the same schedule. The first request is sent at once. A rate of +Inf
// gives all zeros.
func Arrivals(n int, rate float64, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	// Inverse transform of PCG's output, both fully specified, so the
	// schedule cannot change with the Go version.
	src := rand.NewPCG(uint64(seed), 0x6c6f616467656e) // "loadgen"
	t := 0.0
	for i := 1; i < n; i++ {
		u := float64(src.Uint64()>>11) / (1 << 53) // [0, 1)
		t += -math.Log1p(-u) / rate
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out
}
