package metricdefs

import (
	"context"

	"github.com/joulebench/joulebench/measure"
)

// asiaiBuiltinDefs are the built-ins the asiai profile's statistics and
// numeric edge cases need: the 95 % confidence interval of a mean and the
// count of real power readings in a window.
func asiaiBuiltinDefs() []builtinDef {
	return []builtinDef{
		numList1("mean_ci95", "half-width of the 95 % confidence interval of the mean: t(0.975, n−1) · sample std / √n; n < 2 is an error", measure.MeanCI95),
		{
			Builtin: Builtin{"power_readings", `power_readings(a, b) int`, `samples with a ≤ t ≤ b whose power is above 0 W, over every device (0 with no power samples): a window where every sample reads 0 W has no reading`},
			fn: func(p ...any) (any, error) {
				d, a, b, err := dataInterval("power_readings", p)
				if err != nil {
					return nil, err
				}
				return d.Power.PowerReadings(a, b), nil
			},
			types: []any{new(func(context.Context, float64, float64) int)},
		},
		{
			Builtin: Builtin{"max_mem", `max_mem(a, b) float`, `GPU memory in use in bytes: each device's largest known mem_used_bytes among its samples in [a, b], summed over devices (0 when no sample has one)`},
			fn: func(p ...any) (any, error) {
				d, a, b, err := dataInterval("max_mem", p)
				if err != nil {
					return nil, err
				}
				total := 0.0
				for _, dev := range d.Power.Devices() {
					if m, ok := d.Power.MaxMem(dev, a, b); ok {
						total += float64(m)
					}
				}
				return total, nil
			},
			types: []any{new(func(context.Context, float64, float64) float64)},
		},
	}
}
