package loadgen

import (
	"fmt"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Unlimited sends every request at once, with no rate or concurrency
// limit (the formal stage of benchmark-1.5). Capped at N in flight it is
// Concurrency N (vLLM's --max-concurrency without a rate).
const Unlimited Mode = "unlimited"

var unlimitedKind = ShapeKind{
	Mode:   Unlimited,
	Doc:    "every request at once",
	Role:   RoleAllAtOnce,
	Params: []string{ParamMaxConcurrency},
	Decode: func(c Config) (Shape, error) {
		if c.Concurrency > 0 {
			return nil, fmt.Errorf("concurrency %d with mode %s: set mode %s for a fixed number in flight (or max_concurrency to cap)", c.Concurrency, Unlimited, Concurrency)
		}
		if c.MaxConcurrency > 0 {
			return concurrencyShape{c.MaxConcurrency}, nil
		}
		return unlimitedShape{}, nil
	},
}

type unlimitedShape struct{}

func (unlimitedShape) Record() *record.LoadShape    { return &record.LoadShape{Mode: string(Unlimited)} }
func (unlimitedShape) Open() bool                   { return false }
func (unlimitedShape) InFlight() int                { return 0 }
func (unlimitedShape) Schedule(int) []time.Duration { return nil }
