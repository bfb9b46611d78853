package loadgen

import (
	"math"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Constant sends at a fixed rate: request i at i / rate.
const Constant Mode = "constant"

var constantKind = ShapeKind{
	Mode:   Constant,
	Doc:    "a fixed rate: request i at i / rate",
	Params: openParams(ParamRate),
	Decode: func(c Config) (Shape, error) {
		cp, err := decodeCap(c)
		if err != nil {
			return nil, err
		}
		rate, err := decodeRate(c)
		return constantShape{cp, rate}, err
	},
}

type constantShape struct {
	openCap
	rate float64
}

func (s constantShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Constant), Rate: s.rate, MaxConcurrency: s.max}
}

func (s constantShape) Schedule(n int) []time.Duration { return ConstantArrivals(n, s.rate) }

// ConstantArrivals returns the send offsets of n requests at a constant
// rate (requests per second): request i at i / rate. A rate of +Inf gives
// all zeros.
func ConstantArrivals(n int, rate float64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	for i := range out {
		out[i] = seconds(float64(i) / rate)
	}
	return out
}
