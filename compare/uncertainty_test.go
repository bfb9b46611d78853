package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// neverBound makes a run's cap one that never bound in its formal stage.
func neverBound(r Run) Run {
	no := false
	r.Meta.GPUSettings.Devices = []record.GPUSettingsDevice{{Formal: &record.GPUSettingsBound{Samples: 100, CapBound: &no}}}
	return r
}

// Two physically identical configurations run twice each: c16 under a
// 350 W cap that never bound (a1, a2) and c16 at the default setting
// (b1, b2), every run meeting TPOT ≤ 10 ms for 90 % (attainment 0.95). By
// hand, steady J/token:
//
//	A (350 W)   0.198, 0.208: median 0.203, mean 0.203, s = 0.0070711
//	B (default) 0.204, 0.206: median 0.205, mean 0.205, s = 0.0014142
//
// 95 % t-intervals, t(0.975, 1) = 12.7062:
//
//	A: 0.203 ± 12.7062 · 0.0070711 / √2 = 0.203 ± 0.063531 → [0.139469, 0.266531]
//	B: 0.205 ± 12.7062 · 0.0014142 / √2 = 0.205 ± 0.012706 → [0.192294, 0.217706]
//
// A is the lowest (0.203) but its cap never bound: the default setting at
// the same load, B, is chosen. The runner-up A is not separable (the
// intervals overlap). Without the never-bound record on A, the intervals
// still overlap: same SLO margin (0.95 − 0.9), so the tie rule takes the
// smaller setting change, the default B, again.
func TestIdenticalConfigurationsNotSeparable(t *testing.T) {
	p := builtin(t)
	r := func(id, limit string, steady float64) Run {
		return capRun(id, 16, limit, steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "formal_j_per_token": steady})
	}
	for _, bound := range []bool{false, true} {
		a1, a2 := r("a1", "350", 0.198), r("a2", "350", 0.208)
		if bound { // unknown whether it bound: only the intervals decide
			a1.Meta.GPUSettings.Devices, a2.Meta.GPUSettings.Devices = nil, nil
		} else {
			a1, a2 = neverBound(a1), neverBound(a2)
		}
		rep := p.Compare([]Run{a1, a2, r("b1", "", 0.204), r("b2", "", 0.206)})
		d := rep.Decision
		if !d.Chosen || d.Run != "b1" || *d.JPerToken != 0.205 || d.Label != "c16 · default" {
			t.Fatalf("cap bound unknown %v: decision %s (%s) %v; want b1 (c16 · default) 0.205", bound, d.Run, d.Label, d.JPerToken)
		}
		if ci := d.JPerTokenCI; ci == nil || math.Abs(ci[0]-0.192294) > 1e-6 || math.Abs(ci[1]-0.217706) > 1e-6 || !strings.Contains(d.CIMethod, "t-interval over the 2 repetitions") {
			t.Errorf("interval %v (%s), want [0.192294, 0.217706]", d.JPerTokenCI, d.CIMethod)
		}
		ru := d.RunnerUp
		if ru == nil || ru.Run != "a1" || ru.Separable || !strings.Contains(ru.Why, "not separable from the choice (-1.0 %): the intervals overlap ([0.1395, 0.2665] vs [0.1923, 0.2177])") {
			t.Errorf("runner-up %+v", ru)
		}
		wantNote := "the same SLO margin, and the smaller setting change from the default"
		if !bound {
			wantNote = "the cap of a1 (c16 · 350 W) never bound"
		}
		if !strings.Contains(d.Note, wantNote) {
			t.Errorf("note %q lacks %q", d.Note, wantNote)
		}
		var buf bytes.Buffer
		if err := Render(&buf, rep, doc.FormatTable); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Runner-up: run a1 (c16 · 350 W), not separable from the choice", "Interval of its steady-state J/token: [0.1923, 0.2177] (95 % t-interval over the 2 repetitions"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, buf.String())
			}
		}
	}
}

// Two configurations far apart, twice each: separable, and the lowest
// stands. By hand: A 0.100, 0.102 (mean 0.101, s 0.0014142, half
// 12.7062 · 0.001 = 0.012706 → [0.088294, 0.113706]); B 0.200, 0.204
// (mean 0.202, half 12.7062 · 0.002 = 0.025412 → [0.176588, 0.227412]):
// disjoint.
func TestSeparableRunnerUp(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, steady float64) Run {
		return capRun(id, conc, "", steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95})
	}
	d := p.Compare([]Run{r("a1", 8, 0.100), r("a2", 8, 0.102), r("b1", 16, 0.200), r("b2", 16, 0.204)}).Decision
	if d.Run != "a1" || d.RunnerUp == nil || !d.RunnerUp.Separable || !strings.Contains(d.RunnerUp.Why, "separable from the choice (+100.0 %): the intervals do not overlap ([0.1766, 0.2274] vs [0.0883, 0.1137])") {
		t.Errorf("decision %s, runner-up %+v", d.Run, d.RunnerUp)
	}
}

// windows is a steady_window_j_per_token value as results.json holds it.
func windows(xs ...float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// One run per point: batch means over each run's steady windows. By
// hand, t(0.975, 3) = 3.1824 (k = 4 windows):
//
//	c8,  steady 0.207, windows 0.20, 0.21, 0.19, 0.22: mean 0.205,
//	     deviations ∓0.005, ∓0.015: Σd² = 2·0.000025 + 2·0.000225 = 0.0005,
//	     s = √(0.0005/3) = 0.0129099, s/√4 = 0.00645497,
//	     half = 3.1824 · 0.00645497 = 0.0205423 → 0.207 ± 0.0205423 =
//	     [0.1864577, 0.2275423] (centred on the run's figure 0.207)
//	c16, steady 0.300, windows 0.29, 0.31, 0.30, 0.30: Σd² = 0.0002,
//	     s = √(0.0002/3) = 0.00816497, s/√4 = 0.00408248,
//	     half = 3.1824 · 0.00408248 = 0.0129921 → [0.2870079, 0.3129921]
//
// c8 is the lowest; the intervals are disjoint: the runner-up c16
// (+44.9 %: 0.300/0.207 − 1 = 0.44928) is separable.
func TestBatchMeansInterval(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, steady float64, w []any) Run {
		return capRun(id, conc, "", steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "steady_window_j_per_token": w})
	}
	d := p.Compare([]Run{r("a", 8, 0.207, windows(0.20, 0.21, 0.19, 0.22)), r("b", 16, 0.300, windows(0.29, 0.31, 0.30, 0.30))}).Decision
	if d.Run != "a" {
		t.Fatalf("decision %s, want a", d.Run)
	}
	if ci := d.JPerTokenCI; ci == nil || math.Abs(ci[0]-0.1864577) > 1e-6 || math.Abs(ci[1]-0.2275423) > 1e-6 ||
		!strings.Contains(d.CIMethod, "batch means over the 4 steady windows of its one run (its J/token ± t(0.975, 3) · s / √4") {
		t.Errorf("interval %v (%s), want [0.1864577, 0.2275423] by batch means over 4 windows", d.JPerTokenCI, d.CIMethod)
	}
	ru := d.RunnerUp
	if ru == nil || ru.Run != "b" || !ru.Separable || !strings.Contains(ru.Why, "separable from the choice (+44.9 %): the intervals do not overlap ([0.2870, 0.3130] vs [0.1865, 0.2275])") {
		t.Errorf("runner-up %+v", ru)
	}
}

// Two physically identical configurations run once each (c16 under a
// 350 W cap of unknown effect, and at the default setting), each with
// its steady windows. By hand, t(0.975, 3) = 3.1824:
//
//	A (350 W)   steady 0.203, windows 0.20, 0.21, 0.19, 0.22: half
//	            0.0205423 (TestBatchMeansInterval) → [0.1824577, 0.2235423]
//	B (default) steady 0.205, windows 0.204, 0.206, 0.200, 0.210: mean
//	            0.205, Σd² = 2·0.000001 + 2·0.000025 = 0.000052,
//	            s = √(0.000052/3) = 0.00416333, s/√4 = 0.00208167,
//	            half = 3.1824 · 0.00208167 = 0.0066247 → [0.1983753, 0.2116247]
//
// A is the lowest but the intervals overlap: not separable; the same SLO
// margin, so the tie rule takes the smaller setting change, B.
func TestBatchMeansIdenticalNotSeparable(t *testing.T) {
	p := builtin(t)
	r := func(id, limit string, steady float64, w []any) Run {
		return capRun(id, 16, limit, steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "steady_window_j_per_token": w})
	}
	d := p.Compare([]Run{r("a", "350", 0.203, windows(0.20, 0.21, 0.19, 0.22)), r("b", "", 0.205, windows(0.204, 0.206, 0.200, 0.210))}).Decision
	if d.Run != "b" || !strings.Contains(d.Note, "not separable from the lowest, a") {
		t.Fatalf("decision %s, note %q; want b by the tie rule", d.Run, d.Note)
	}
	if ci := d.JPerTokenCI; ci == nil || math.Abs(ci[0]-0.1983753) > 1e-6 || math.Abs(ci[1]-0.2116247) > 1e-6 {
		t.Errorf("interval %v (%s), want [0.1983753, 0.2116247]", d.JPerTokenCI, d.CIMethod)
	}
	ru := d.RunnerUp
	if ru == nil || ru.Run != "a" || ru.Separable || !strings.Contains(ru.Why, "not separable from the choice (-1.0 %): the intervals overlap ([0.1825, 0.2235] vs [0.1984, 0.2116])") {
		t.Errorf("runner-up %+v", ru)
	}
}

// Where the steady windows are unusable (one window, a value that is
// not a positive number, not a list, null) there
// is no batch-means interval; with two runs the repetitions' interval
// stands over the windows.
func TestBatchMeansNeedsWindows(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, steady float64, w any) Run {
		return capRun(id, conc, "", steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "steady_window_j_per_token": w})
	}
	for name, w := range map[string]any{"one window": windows(0.2), "a zero": windows(0.2, 0), "a string": []any{0.2, "x"}, "not a list": 0.2, "null": nil} {
		d := p.Compare([]Run{r("a", 8, 0.2, w), r("b", 16, 0.3, windows(0.29, 0.31))}).Decision
		if d.Run != "a" || d.JPerTokenCI != nil || !strings.Contains(d.CIMethod, "no per-window J/token") || d.RunnerUp == nil || d.RunnerUp.Separable {
			t.Errorf("%s: decision %s, interval %v (%s), runner-up %+v", name, d.Run, d.JPerTokenCI, d.CIMethod, d.RunnerUp)
		}
	}
	// Two runs of c8: t-interval over the repetitions (0.2, 0.202: mean
	// 0.201, s = 0.0014142, half = 12.7062 · 0.001 = 0.0127062).
	d := p.Compare([]Run{r("a1", 8, 0.2, windows(0.1, 0.3)), r("a2", 8, 0.202, windows(0.1, 0.3)), r("b", 16, 0.3, windows(0.29, 0.31))}).Decision
	if ci := d.JPerTokenCI; ci == nil || math.Abs(ci[0]-(0.201-0.0127062)) > 1e-6 || !strings.Contains(d.CIMethod, "t-interval over the 2 repetitions") {
		t.Errorf("two runs: interval %v (%s), want the repetitions'", d.JPerTokenCI, d.CIMethod)
	}
}

// Fewer than minBatches (4) steady windows give no batch-means interval:
// with 2 windows t(0.975, 1) = 12.7062, and 0.2 ± 12.7062 · s/√2 for
// windows 0.15, 0.25 (s = 0.0707107) is 0.2 ± 0.635 — a point 40 % higher
// would be "not separable" and the tie rule would choose it. The lower
// point stands, its interval unknown, and the output says why.
func TestBatchMeansNeedFourWindows(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, steady float64, w any) Run {
		return capRun(id, conc, "", steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "steady_window_j_per_token": w})
	}
	for _, w := range [][]any{windows(0.15, 0.25), windows(0.15, 0.2, 0.25)} {
		d := p.Compare([]Run{r("a", 8, 0.2, w), r("b", 16, 0.28, windows(0.27, 0.29))}).Decision
		if d.Run != "a" || d.JPerTokenCI != nil || !strings.Contains(d.CIMethod, "fewer than the 4 batch means need") {
			t.Errorf("%d windows: decision %s, interval %v (%s)", len(w), d.Run, d.JPerTokenCI, d.CIMethod)
		}
	}
}

// A long run's 70 steady windows (more than the 64 items results.json
// stores: compare reads the results in memory, metricdefs keeps the
// list whole) give the batch-means interval over all 70. By hand, the
// windows alternate 0.19 and 0.21: mean 0.2, every deviation ±0.01,
// Σd² = 70 · 0.0001 = 0.007, s = √(0.007/69) = 0.0100722, s/√70 =
// 0.00120386; t(0.975, 69) is the normal 1.96 (past the table's 30):
// half = 0.00235956 → 0.2 ± 0.00235956 = [0.1976404, 0.2023596].
func TestBatchMeansOverMoreThan64Windows(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, steady float64, w []any) Run {
		return capRun(id, conc, "", steady, 10, 0.9, map[string]any{"tpot_p90_ms": 8.0, "slo_attainment": 0.95, "steady_window_j_per_token": w})
	}
	var long []float64
	for range 35 {
		long = append(long, 0.19, 0.21)
	}
	d := p.Compare([]Run{r("a", 8, 0.2, windows(long...)), r("b", 16, 0.300, windows(0.29, 0.31, 0.30, 0.30))}).Decision
	if d.Run != "a" {
		t.Fatalf("decision %s, want a", d.Run)
	}
	if ci := d.JPerTokenCI; ci == nil || math.Abs(ci[0]-0.1976404) > 1e-6 || math.Abs(ci[1]-0.2023596) > 1e-6 ||
		!strings.Contains(d.CIMethod, "batch means over the 70 steady windows of its one run (its J/token ± t(0.975, 69) · s / √70") {
		t.Errorf("interval %v (%s), want [0.1976404, 0.2023596] by batch means over 70 windows", d.JPerTokenCI, d.CIMethod)
	}
}
