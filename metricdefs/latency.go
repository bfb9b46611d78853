package metricdefs

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
)

// latencyBuiltins are the built-ins of the latency percentiles (ITL) and of
// the idle-baseline checks.
func latencyBuiltins() []builtinDef {
	return []builtinDef{
		{
			Builtin: Builtin{"itl", `itl(requests) list`, `inter-token latencies in s pooled over the successful requests given: each gap between successive chunks (token_times) divided by the tokens of the later chunk (token_counts, 1 when absent); see docs/methodology.md`},
			fn: func(p ...any) (any, error) {
				reqs, err := toRequests(p[0])
				if err != nil {
					return nil, fmt.Errorf("itl: %w", err)
				}
				return measureITL(reqs)
			},
			types: []any{new(func([]*record.Request) []float64), new(func([]any) []float64)},
		},
		{
			Builtin: Builtin{"baseline_cv", `baseline_cv() map`, `per device: coefficient of variation (population std / mean) of its power samples in the baseline stage`},
			fn: func(p ...any) (any, error) {
				stats, err := baselineStats(p[0].(context.Context))
				if err != nil {
					return nil, fmt.Errorf("baseline_cv: %w", err)
				}
				out := make(map[string]float64, len(stats))
				for dev, s := range stats {
					out[dev] = s.PowerCV
				}
				return out, nil
			},
			types: []any{new(func(context.Context) map[string]float64)},
		},
		{
			Builtin: Builtin{"baseline_mem", `baseline_mem() map`, `per device: the most GPU memory in use (MiB) among its samples in the baseline stage; devices that report no memory are left out`},
			fn: func(p ...any) (any, error) {
				stats, err := baselineStats(p[0].(context.Context))
				if err != nil {
					return nil, fmt.Errorf("baseline_mem: %w", err)
				}
				out := make(map[string]float64, len(stats))
				for dev, s := range stats {
					if s.MemMaxBytes >= 0 {
						out[dev] = float64(s.MemMaxBytes) / (1 << 20)
					}
				}
				return out, nil
			},
			types: []any{new(func(context.Context) map[string]float64)},
		},
	}
}
