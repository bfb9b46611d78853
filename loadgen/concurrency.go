package loadgen

import (
	"fmt"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Concurrency keeps a fixed number of requests in flight (the concurrency
// parameter), the next one sent as soon as one finishes.
const Concurrency Mode = "concurrency"

var concurrencyKind = ShapeKind{
	Mode:   Concurrency,
	Doc:    "a fixed number of requests in flight",
	Role:   RoleInFlight,
	Params: []string{ParamConcurrency},
	Decode: func(c Config) (Shape, error) {
		switch {
		case c.Concurrency < 1:
			return nil, fmt.Errorf("mode %s needs concurrency ≥ 1, got %d", Concurrency, c.Concurrency)
		case c.MaxConcurrency > 0:
			return nil, fmt.Errorf("mode %s sets its requests in flight with concurrency (%d); max_concurrency (%d) caps the other modes", Concurrency, c.Concurrency, c.MaxConcurrency)
		}
		return concurrencyShape{c.Concurrency}, nil
	},
}

type concurrencyShape struct{ n int }

func (s concurrencyShape) Record() *record.LoadShape {
	return &record.LoadShape{Mode: string(Concurrency), Concurrency: s.n}
}
func (concurrencyShape) Open() bool                   { return false }
func (s concurrencyShape) InFlight() int              { return s.n }
func (concurrencyShape) Schedule(int) []time.Duration { return nil }
