package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/plot"
)

// capSweepRuns are a power-limit sweep under a TPOT SLO of 13 ms for 90
// % of requests, two concurrencies per limit: formal J/token j, TPOT p90
// and p99, attainment. By hand: 250 W c32 misses the SLO (p90 14 > 13,
// attainment 0.85 < 0.9); of the rest the lowest formal J/token is 300 W
// c32's 0.27 (250 W c16 0.30, 300 W c16 0.32, 350 W c16 0.34, 350 W c32
// 0.29), and so per good token (0.27/0.93 = 0.2903, the lowest) and in
// steady state (j - 0.01).
func capSweepRuns() []compare.Run {
	var runs []compare.Run
	for _, c := range []struct {
		w, conc          int
		j, p90, p99, att float64
	}{{250, 16, 0.30, 10, 11, 0.97}, {250, 32, 0.25, 14, 15, 0.85}, {300, 16, 0.32, 9, 10, 0.98},
		{300, 32, 0.27, 12, 12.5, 0.93}, {350, 16, 0.34, 8.5, 9, 0.99}, {350, 32, 0.29, 11, 12, 0.95}} {
		id := "cap" + strconv.Itoa(c.w) + "-c" + strconv.Itoa(c.conc)
		res := &record.Results{RunID: id, Simulated: true, Values: map[string]record.Result{}}
		for name, v := range map[string]float64{"steady_state_j_per_token": c.j - 0.01, "formal_j_per_token": c.j, "full_lifecycle_j_per_token": c.j * 1.5,
			"startup_energy_j": 100, "release_energy_j": 10, "formal_output_tokens": 10000, "tpot_p50_ms": c.p90 - 2, "tpot_p90_ms": c.p90, "tpot_p99_ms": c.p99,
			"slo_attainment": c.att, "j_per_good_token": c.j / c.att, "output_throughput_tok_s": 50 * float64(c.conc), "goodput_tok_s": 50 * float64(c.conc) * c.att} {
			res.Order = append(res.Order, name)
			res.Values[name] = record.Result{Kind: "metric", Value: v}
		}
		meta := record.Meta{FormatVersion: 1, RunID: id, Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"},
			Engine: record.EngineInfo{Kind: "sim", Model: "m"}, Status: record.StatusComplete, Labels: map[string]string{"scenario": "chat"},
			Parameters:  map[string]any{"mode": "concurrency", "concurrency": float64(c.conc), "slo_tpot_ms": 13.0, "slo_attainment_target": 0.9},
			GPUSettings: &record.GPUSettings{PowerLimitW: strconv.Itoa(c.w), Controller: "sim"}}
		runs = append(runs, compare.Run{Dir: "runs/" + id, Meta: meta, Results: res})
	}
	return runs
}

// plot --frontier of a cap sweep: one series per power limit, each point
// labelled with its load and setting, against the latency the SLO's
// target implies (tpot_p90_ms), the SLO's line named with that
// percentile, the decision's run (300 W c32, by hand) ringed and named in
// the legend.
func TestDecisionFrontierOfCapSweep(t *testing.T) {
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	runs := capSweepRuns()
	rep := prof.Compare(runs)
	if rep.Decision == nil || rep.Decision.Run != "cap300-c32" {
		t.Fatalf("decision %+v, want cap300-c32 (by hand)", rep.Decision)
	}
	f := DecisionFrontier(rep)
	if f == nil {
		t.Fatal("no figure")
	}
	if f.Latency != "tpot_p90_ms" || len(f.Bounds) != 1 || f.Bounds[0] != 13 {
		t.Errorf("x %q, bounds %v; want tpot_p90_ms and the SLO's 13 ms", f.Latency, f.Bounds)
	}
	if f.Basis != compare.BasisShort(rep.Decision.Basis) {
		t.Errorf("basis %q, want the decision's %q", f.Basis, compare.BasisShort(rep.Decision.Basis))
	}
	var got []string
	best := ""
	for _, s := range f.Series {
		var labels []string
		for _, p := range s.Points {
			labels = append(labels, p.Label)
			if p.Best {
				best += p.Label
			}
		}
		got = append(got, s.Name+": "+strings.Join(labels, ", "))
	}
	// In order of latency: c16 before c32 at every limit.
	want := []string{"250 W: c16 · 250 W, c32 · 250 W", "300 W: c16 · 300 W, c32 · 300 W", "350 W: c16 · 350 W, c32 · 350 W"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if best != "c32 · 300 W" {
		t.Errorf("ringed %q, want c32 · 300 W", best)
	}
	var buf bytes.Buffer
	if err := plot.RenderFrontier(&buf, f, "svg", plot.Options{Width: 900, Height: 600}); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, w := range []string{"SLO: TPOT p90 ≤ 13 ms (90 % of requests)", "the decision&#39;s choice: c32 · 300 W", "tpot_p90_ms (ms)", "c16 · 350 W"} {
		if !strings.Contains(svg, w) && !strings.Contains(svg, strings.ReplaceAll(w, "&#39;", "'")) {
			t.Errorf("svg lacks %q", w)
		}
	}
}
