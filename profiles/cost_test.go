package profiles_test

import (
	"math"
	"strings"
	"testing"
)

// Cost and carbon on sloRun (slo_test.go): formal energy 200 W × 10 s =
// 2000 J over 11 + 21 + 21 + 1 + 31 = 85 output tokens, so
// formal_j_per_token = 2000/85 J/token; throughput 85 tok / 10 s = 8.5
// tok/s; one GPU measured. With grid 360 gCO2/kWh, PUE 1.5, 0.18 USD/kWh
// and 3.6 USD per GPU-hour:
//
//	kWh per Mtoken = 2000/85 × 10^6 / 3.6e6 = 2000/85 / 3.6
//	gco2_per_mtoken = 2000/85 / 3.6 × 1.5 × 360 = 2000/85 × 150 = 300000/85 ≈ 3529.41
//	usd_per_mtoken  = 2000/85 / 3.6 × 1.5 × 0.18 + 3.6 × 1 × 10^6 / (8.5 × 3600)
//	                = 2000/85 × 0.075 + 10^6/8.5 = 150/85 + 10000/85 = 10150/85 ≈ 119.41
//
// PUE 0 is not applied (factor 1): gco2 = 2000/85 / 3.6 × 360 = 200000/85.
// Electricity only (gpu_usd_per_hour 0): usd = 150/85 / 1.5 = 100/85 at PUE 1.
func TestCostAndCarbonHandValues(t *testing.T) {
	all := map[string]string{"grid_gco2_per_kwh": "360", "pue": "1.5", "usd_per_kwh": "0.18", "gpu_usd_per_hour": "3.6"}
	cases := []struct {
		name string
		sets map[string]string
		want map[string]float64 // NaN: not applicable
	}{
		{"every input", all, map[string]float64{"gco2_per_mtoken": 300000.0 / 85, "usd_per_mtoken": 10150.0 / 85}},
		{"pue 0 is factor 1", map[string]string{"grid_gco2_per_kwh": "360", "usd_per_kwh": "0.18"},
			map[string]float64{"gco2_per_mtoken": 200000.0 / 85, "usd_per_mtoken": 100.0 / 85}},
		{"GPU-hour price only", map[string]string{"gpu_usd_per_hour": "3.6"},
			map[string]float64{"gco2_per_mtoken": math.NaN(), "usd_per_mtoken": 10000.0 / 85}},
		{"nothing set: not applied", nil, map[string]float64{"gco2_per_mtoken": math.NaN(), "usd_per_mtoken": math.NaN()}},
	}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		for _, c := range cases {
			res := evalProfile(t, prof, sloRun(), c.sets)
			for name, want := range c.want {
				r := res.Values[name]
				if math.IsNaN(want) {
					if r.Value != nil || !strings.Contains(r.Note, "not applied") {
						t.Errorf("%s %s: %s = %v (%s), want not applicable (not applied)", prof, c.name, name, r.Value, r.Note)
					}
					continue
				}
				got, ok := r.Value.(float64)
				if !ok || math.Abs(got-want) > 1e-9*want {
					t.Errorf("%s %s: %s = %v (%s), want %v", prof, c.name, name, r.Value, r.Note, want)
				}
			}
		}
		// Shown with its inputs.
		res := evalProfile(t, prof, sloRun(), all)
		if n := res.Values["gco2_per_mtoken"].Note; n != "formal 23.5294 J/token × PUE 1.5 × grid 360 gCO2/kWh" {
			t.Errorf("%s: gco2_per_mtoken note %q", prof, n)
		}
		if n := res.Values["usd_per_mtoken"].Note; n != "formal 23.5294 J/token × PUE 1.5 × 0.18 USD/kWh + 3.6 USD/GPU-hour × 1 GPU(s) at 8.5 tok/s" {
			t.Errorf("%s: usd_per_mtoken note %q", prof, n)
		}
	}
}

// The steady-state variants apply the same formulas to the steady span
// (steady_state_j_per_token; its tokens over its duration for the GPU
// hours), and are not applicable, with the reason, without steady state.
// sloRun's span with window 2 (TestSLOHandValues): from r1's completion,
// [101.125, 110], 200 W × 8.875 s = 1775 J, with 0 + 14.4375 + 21 + 1 + 31
// = 67.4375 tokens in it (r1 none, r2's share after 101.125), so steady
// J/token = 1775/67.4375 and 67.4375/8.875 tok/s:
//
//	gco2 = 1775/67.4375 × 150 = 266250/67.4375 ≈ 3948.10
//	usd  = 1775/67.4375 × 0.075 + 3.6 × 10^6 / (67.4375/8.875 × 3600)
//	     = 133.125/67.4375 + 8875/67.4375 = 9008.125/67.4375 ≈ 133.58
func TestCostAndCarbonSteady(t *testing.T) {
	sets := map[string]string{"grid_gco2_per_kwh": "360", "pue": "1.5", "usd_per_kwh": "0.18", "gpu_usd_per_hour": "3.6",
		"window": "2", "min_windows": "2", "cv_max": "10"}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		res := evalProfile(t, prof, sloRun(), sets)
		for n, want := range map[string]float64{"gco2_per_mtoken_steady": 266250.0 / 67.4375, "usd_per_mtoken_steady": 9008.125 / 67.4375} {
			if got, ok := res.Values[n].Value.(float64); !ok || math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s: %s = %v (%s), want %v", prof, n, res.Values[n].Value, res.Values[n].Note, want)
			}
		}
		delete(sets, "window")
		res = evalProfile(t, prof, sloRun(), sets) // window 100: five requests never reach it
		for _, n := range []string{"gco2_per_mtoken_steady", "usd_per_mtoken_steady"} {
			if r := res.Values[n]; r.Value != nil || !strings.Contains(r.Note, "steady") {
				t.Errorf("%s: %s = %v (%s), want not applicable: steady state", prof, n, r.Value, r.Note)
			}
		}
		sets["window"] = "2"
	}
}
