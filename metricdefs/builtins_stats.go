package metricdefs

import (
	"fmt"

	"github.com/joulebench/joulebench/measure"
)

// statsBuiltinDefs are the statistics over lists of numbers.
func statsBuiltinDefs() []builtinDef {
	return []builtinDef{
		{
			Builtin: Builtin{"percentile", `percentile(xs, p) float`, `p-th percentile (0–100), linear interpolation between closest ranks`},
			fn: func(p ...any) (any, error) {
				xs, err := toFloats(p[0])
				if err != nil {
					return nil, fmt.Errorf("percentile: %w", err)
				}
				q, _ := toFloat(p[1])
				return measure.Percentile(xs, q)
			},
			types: []any{new(func([]float64, float64) float64), new(func([]int, float64) float64), new(func([]any, float64) float64)},
		},
		numList1("median", "median (50th percentile)", measure.Median),
		numList1("mean", "arithmetic mean", measure.Mean),
		numList1("std", "population standard deviation", measure.Std),
		numList1("sample_std", "sample standard deviation (n-1)", measure.SampleStd),
		numList1("cv", "coefficient of variation: population std / mean", measure.CV),
		{
			Builtin: Builtin{"pooled_std", `pooled_std(values, groups) float`, `pooled intra-group std dev (asiai M8): per group with ≥ 2 values its population variance, mean of those, square root`},
			fn: func(p ...any) (any, error) {
				xs, err := toFloats(p[0])
				if err != nil {
					return nil, fmt.Errorf("pooled_std: values: %w", err)
				}
				gs, err := toStrings(p[1])
				if err != nil {
					return nil, fmt.Errorf("pooled_std: groups: %w", err)
				}
				return measure.PooledStd(xs, gs)
			},
			types: []any{new(func([]float64, []any) float64), new(func([]any, []any) float64), new(func([]any, []string) float64), new(func([]float64, []string) float64)},
		},
		{
			Builtin: Builtin{"spearman", `spearman(x, y) float`, `Spearman rank correlation (ties get average ranks)`},
			fn: func(p ...any) (any, error) {
				x, err := toFloats(p[0])
				if err != nil {
					return nil, fmt.Errorf("spearman: x: %w", err)
				}
				y, err := toFloats(p[1])
				if err != nil {
					return nil, fmt.Errorf("spearman: y: %w", err)
				}
				return measure.Spearman(x, y)
			},
			types: []any{new(func([]float64, []float64) float64), new(func([]any, []any) float64)},
		},
	}
}
