package metricdefs

import (
	"context"
	"fmt"
	"math"

	"github.com/joulebench/joulebench/measure"
)

// energyBuiltinDefs are the built-ins over the power samples: energy,
// counter checks and mean power.
func energyBuiltinDefs() []builtinDef {
	return []builtinDef{
		{
			Builtin: Builtin{"energy", `energy(a, b, method) float`, `GPU energy in J summed over devices on [a, b]; method "trapz" (power samples, interpolated boundaries), "counter" (cumulative energy counter, interpolated) or "auto" (counter when every device has one)`},
			fn: func(p ...any) (any, error) {
				pd, a, b, err := powerOver(p, 1)
				if err != nil {
					return nil, err
				}
				return pd.Energy(a, b, p[3].(string))
			},
			types: ctxT(new(func(context.Context, float64, float64, string) float64)),
		},
		{
			Builtin: Builtin{"device_energy", `device_energy(device, a, b, method) float`, `energy(a, b, method) of one device`},
			fn: func(p ...any) (any, error) {
				pd, a, b, err := powerOver(p, 2)
				if err != nil {
					return nil, err
				}
				return pd.DeviceEnergy(p[1].(string), a, b, p[4].(string))
			},
			types: ctxT(new(func(context.Context, string, float64, float64, string) float64)),
		},
		{
			Builtin: Builtin{"counter_vs_trapz", `counter_vs_trapz(a, b) {counter_j, trapz_j, rel_diff, glitches, note}`, `energy on [a, b] by the energy counter (glitches corrected) and by the trapezoid, summed over devices; rel_diff = |counter_j - trapz_j| / max of the two; glitches counts the counter glitches (resets, backward steps, frozen counters) inside, which note lists`},
			fn: func(p ...any) (any, error) {
				pd, a, b, err := powerOver(p, 1)
				if err != nil {
					return nil, err
				}
				cc, err := pd.CounterVsTrapz(a, b)
				if err != nil {
					return nil, fmt.Errorf("counter_vs_trapz: %w", err)
				}
				return CounterCheckView{CounterJ: cc.CounterJ, TrapzJ: cc.TrapzJ, RelDiff: cc.RelDiff,
					Glitches: len(cc.Glitches), Note: glitchNote(cc.Glitches)}, nil
			},
			types: ctxT(new(func(context.Context, float64, float64) CounterCheckView)),
		},
		{
			Builtin: Builtin{"counter_glitches", `counter_glitches() list`, `every energy-counter glitch of the run (reset, backward step, counter frozen while power > 0), each as "device X: … on [from, to] …: trapezoid used"; energy(…, "counter") uses the trapezoid on those intervals`},
			fn: func(p ...any) (any, error) {
				pd, err := powerFrom(p[0].(context.Context))
				if err != nil {
					return nil, err
				}
				gs := pd.CounterGlitches(math.Inf(-1), math.Inf(1))
				out := make([]string, len(gs))
				for i, g := range gs {
					out[i] = g.String()
				}
				return out, nil
			},
			types: ctxT(new(func(context.Context) []string)),
		},
		{
			Builtin: Builtin{"mean_power", `mean_power(a, b) float`, `time-weighted mean power in W over [a, b], summed over devices (trapezoid)`},
			fn: func(p ...any) (any, error) {
				pd, a, b, err := powerOver(p, 1)
				if err != nil {
					return nil, err
				}
				total := 0.0
				for _, dev := range pd.Devices() {
					w, err := pd.MeanPower(dev, a, b)
					if err != nil {
						return nil, err
					}
					total += w
				}
				return total, nil
			},
			types: ctxT(new(func(context.Context, float64, float64) float64)),
		},
		{
			Builtin: Builtin{"baseline_power", `baseline_power() float`, `idle power in W summed over devices: each device's time-weighted mean over the baseline stage`},
			fn: func(p ...any) (any, error) {
				d, err := dataFrom(p[0].(context.Context))
				if err != nil {
					return nil, err
				}
				pw, _, err := d.baselines()
				if err != nil {
					return nil, err
				}
				total := 0.0
				for _, k := range sortedKeys(pw) {
					total += pw[k]
				}
				return total, nil
			},
			types: ctxT(new(func(context.Context) float64)),
		},
	}
}

// powerOver is the power data of a built-in's call (p[0], its context) and
// the interval [a, b] of its arguments p[i] and p[i+1].
func powerOver(p []any, i int) (pd *measure.PowerData, a, b float64, err error) {
	pd, err = powerFrom(p[0].(context.Context))
	if err != nil {
		return nil, 0, 0, err
	}
	a, b, err = twoFloats(p[i], p[i+1])
	if err != nil {
		return nil, 0, 0, err
	}
	return pd, a, b, nil
}
