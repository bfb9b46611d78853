package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/golden"
)

// E(N) on round numbers: E_startup = 1000 J, E_release = 500 J, e_ss = 10 J.
//
//	N = 1:    E = 1000 + 10 + 500 = 1510 J; fixed/N = 1500 J; share 1500/1510
//	N = 100:  E = 1000 + 1000 + 500 = 2500 J; fixed/N = 15 J; E/N = 25 J; share 0.6
//	N = 1000: E = 1000 + 10000 + 500 = 11500 J; fixed/N = 1.5 J; E/N = 11.5 J
//
// Overhead share F/E(N) = 1500/(1500 + 10N) under x ⇔ N > 150(1 - x)/x:
// x = 10 %: N > 1350 → 1351 (at 1350 the share is exactly 1500/15000 = 10 %,
// not under); x = 1 %: N > 14850 → 14851.
func TestLifecycleRoundNumbers(t *testing.T) {
	pts, ths, err := Lifecycle(1000, 500, 10, []int64{1, 100, 1000}, []float64{0.10, 0.01})
	if err != nil {
		t.Fatal(err)
	}
	want := []EstimatePoint{
		{N: 1, EnergyJ: 1510, FixedPerRequestJ: 1500, PerRequestJ: 1510, FixedShare: 1500.0 / 1510},
		{N: 100, EnergyJ: 2500, FixedPerRequestJ: 15, PerRequestJ: 25, FixedShare: 0.6},
		{N: 1000, EnergyJ: 11500, FixedPerRequestJ: 1.5, PerRequestJ: 11.5, FixedShare: 1500.0 / 11500},
	}
	for i, w := range want {
		g := pts[i]
		if g.N != w.N || !near(g.EnergyJ, w.EnergyJ) || !near(g.FixedPerRequestJ, w.FixedPerRequestJ) ||
			!near(g.PerRequestJ, w.PerRequestJ) || !near(g.FixedShare, w.FixedShare) {
			t.Errorf("point %d = %+v, want %+v", i, g, w)
		}
	}
	if len(ths) != 2 || ths[0].N != 1351 || ths[1].N != 14851 {
		t.Errorf("thresholds = %+v, want N = 1351 (10 %%) and 14851 (1 %%)", ths)
	}
	if s := share(1500, 10, 1350); s != 0.1 {
		t.Errorf("share at N = 1350 = %v, want exactly 0.1", s)
	}
	// no fixed overhead: under any share from N = 1
	if _, ths, _ := Lifecycle(0, 0, 10, []int64{1}, []float64{0.01}); ths[0].N != 1 {
		t.Errorf("no overhead: threshold %+v, want N = 1", ths[0])
	}
	for _, bad := range []struct {
		s, r, e float64
		ns      []int64
	}{{-1, 0, 1, []int64{1}}, {0, 0, 0, []int64{1}}, {0, 0, 1, []int64{0}}} {
		if _, _, err := Lifecycle(bad.s, bad.r, bad.e, bad.ns, nil); err == nil {
			t.Errorf("Lifecycle(%v): no error", bad)
		}
	}
}

func estimateRun(requests float64) Run {
	return mk(spec{id: "est", scenario: "chat", model: "m", engine: "vllm", steady: 0.1, full: 0.2, tokens: 1000, values: map[string]any{
		"startup_energy_j": 1000.0, "release_energy_j": 500.0, "steady_window_energy_j": 1000.0,
		"steady_window_requests": requests}})
}

// e_ss = steady window energy / the requests whose tokens fall in it: 1000 J
// over 100 requests = 10 J/request; then as in TestLifecycleRoundNumbers.
// With 80.5 requests (some only partly in the window): 1000/80.5 =
// 12.4223… J/request.
func TestEstimateRun(t *testing.T) {
	p := builtin(t)
	est, err := p.EstimateRun(estimateRun(100), []int64{100, 1000})
	if err != nil {
		t.Fatal(err)
	}
	if est.SteadyRequests != 100 || est.PerRequestJ != 10 || est.FixedJ != 1500 || est.Points[0].EnergyJ != 2500 {
		t.Errorf("estimate = %+v", est)
	}
	if est.Thresholds[0].Share != 0.10 || est.Thresholds[0].N != 1351 || est.Thresholds[1].N != 14851 {
		t.Errorf("thresholds = %+v", est.Thresholds)
	}
	for _, f := range []struct{ format, file string }{
		{doc.FormatTable, "estimate.table.golden"},
		{doc.FormatMarkdown, "estimate.markdown.golden"},
		{doc.FormatCSV, "estimate.csv.golden"},
		{doc.FormatJSON, "estimate.json.golden"},
	} {
		var buf bytes.Buffer
		if err := RenderEstimate(&buf, est, f.format); err != nil {
			t.Fatal(err)
		}
		if f.format != doc.FormatCSV && f.format != doc.FormatJSON && !strings.Contains(buf.String(), "measured values take precedence") {
			t.Errorf("%s: no caveat:\n%s", f.format, buf.String())
		}
		golden.Check(t, f.file, buf.Bytes())
	}

	// Not steady: no estimate, and the error names the run and why.
	if e, err := p.EstimateRun(estimateRun(80.5), []int64{10}); err != nil || !near(e.PerRequestJ, 1000/80.5) {
		t.Errorf("80.5 requests: e_ss %v, %v; want 1000/80.5", e, err)
	}
	ns := estimateRun(100)
	ns.Results.Values["steady_window_energy_j"] = na("J", "steady state not reached")
	if _, err := p.EstimateRun(ns, []int64{10}); err == nil || !strings.Contains(err.Error(), "runs/est") ||
		!strings.Contains(err.Error(), "steady state not reached") {
		t.Errorf("not steady: error %v", err)
	}
	if _, err := p.EstimateRun(estimateRun(0), []int64{10}); err == nil {
		t.Error("no request in the window: no error")
	}
}

func TestParseCounts(t *testing.T) {
	got, err := ParseCounts("100, 1000,1e4")
	if err != nil || len(got) != 3 || got[2] != 10000 {
		t.Errorf("ParseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1.5", "x", "-3", ","} {
		if _, err := ParseCounts(bad); err == nil {
			t.Errorf("ParseCounts(%q): no error", bad)
		}
	}
}

// The estimate says what a flag of its run means for it: a check that
// invalidates only latency figures leaves its inputs alone; one that
// invalidates the baseline-relative figures names E_release; a whole-run
// flag keeps the run out of formal results.
func TestEstimateFlagNotes(t *testing.T) {
	p := builtin(t)
	for _, c := range []struct {
		check, severity string
		invalidates     []string
		want            string
	}{
		{"first_token_times_exact", "warn", []string{"ttft_p50_ms", "tpot_ms"}, "the figures this estimate uses are not affected."},
		{"baseline_idle", "warn", []string{"full_lifecycle_j_per_token", "release_energy_j"}, "E_release is left out of formal results, so this estimate is not a formal result."},
		{"counter_agrees_with_power", "warn", []string{"steady_state_j_per_token", "startup_energy_j", "release_energy_j"}, "E_startup and E_release and e_ss are left out"},
		{"release_closed", "exclude", nil, "it is left out of formal results."},
	} {
		r := estimateRun(10)
		res := check(false, c.severity, c.check+" failed")
		res.Invalidates = c.invalidates
		r.Results.Values[c.check] = res
		r.Results.Order = append(r.Results.Order, c.check)
		est, err := p.EstimateRun(r, []int64{100})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := RenderEstimate(&buf, est, doc.FormatTable); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s: estimate lacks %q:\n%s", c.check, c.want, buf.String())
		}
	}
}
