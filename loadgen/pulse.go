package loadgen

import (
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Pulse sends at a mean rate in pulses: PulseSize requests together, one
// pulse every PulseSize / rate seconds (pulse j at j · PulseSize / rate).
const Pulse Mode = "pulse"

// PulseSize is the number of requests in a pulse.
const PulseSize = 4

var pulseKind = ShapeKind{
	Mode:   Pulse,
	Doc:    "pulses of 4 requests at a mean rate",
	Params: openParams(ParamRate),
	Decode: func(c Config) (Shape, error) {
		cp, err := decodeCap(c)
		if err != nil {
			return nil, err
		}
		rate, err := decodeRate(c)
		return pulseShape{cp, rate}, err
	},
}

type pulseShape struct {
	openCap
	rate float64
}

func (s pulseShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Pulse), Rate: s.rate, MaxConcurrency: s.max}
}

// Schedule sends request i with its pulse, i / PulseSize, at
// (i / PulseSize) · PulseSize / rate.
func (s pulseShape) Schedule(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = seconds(float64(i/PulseSize*PulseSize) / s.rate)
	}
	return out
}
