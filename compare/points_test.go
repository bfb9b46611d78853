package compare

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// pointsCapSweep is a power-limit sweep under a TPOT SLO of 13 ms for 90
// % of requests, two concurrencies per limit, 300 W c32 run twice (the
// second id ends in "b"): formal J/token j (steady state j − 0.01), TPOT
// p90 and p99, attainment.
func pointsCapSweep() []Run {
	var runs []Run
	for _, c := range []struct {
		id               string
		w, conc          int
		j, p90, p99, att float64
	}{{"", 250, 16, 0.30, 10, 11, 0.97}, {"", 250, 32, 0.25, 14, 15, 0.85}, {"", 300, 16, 0.32, 9, 10, 0.98},
		{"", 300, 32, 0.27, 12, 12.5, 0.93}, {"b", 300, 32, 0.27, 12.4, 12.8, 0.93}, {"", 350, 16, 0.34, 9.5, 10, 0.99}, {"", 350, 32, 0.29, 11, 12, 0.95}} {
		id := "cap" + strconv.Itoa(c.w) + "-c" + strconv.Itoa(c.conc) + c.id
		res := &record.Results{RunID: id, Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"}, Values: map[string]record.Result{}}
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
		runs = append(runs, Run{Dir: "runs/" + id, Meta: meta, Results: res})
	}
	return runs
}

// The points compare decided on, as it exports them (Report.Points):
// every run in the statistics on the decision's basis (steady state: the
// lowest steady J/token meeting the SLO is 300 W c32's 0.27 − 0.01 =
// 0.26; 250 W c32 at 0.24 misses it, p90 14 > 13) against the latency the
// SLO's target implies (0.9: tpot_p90_ms), one series per power limit in
// order of first run, points by latency. By hand: 300 W c32's two runs
// are one point, medians J (0.26 + 0.26)/2 = 0.26 and p90 (12 + 12.4)/2
// = 12.2, named by its first run; 350 W c16 (9.5 ms, 0.33) is beaten by
// 300 W c16 (9 ms, 0.31) on both axes, every other point by none.
func TestDecidedPointsOfCapSweep(t *testing.T) {
	type pt struct {
		series, label, run string
		lat, j             float64
		runs               int
		chosen, pareto     bool
	}
	all := []pt{
		{"250 W", "c16 · 250 W", "cap250-c16", 10, 0.29, 1, false, true},
		{"250 W", "c32 · 250 W", "cap250-c32", 14, 0.24, 1, false, true},
		{"300 W", "c16 · 300 W", "cap300-c16", 9, 0.31, 1, false, true},
		{"300 W", "c32 · 300 W", "cap300-c32", 12.2, 0.26, 2, true, true},
		{"350 W", "c16 · 350 W", "cap350-c16", 9.5, 0.33, 1, false, false},
		{"350 W", "c32 · 350 W", "cap350-c32", 11, 0.28, 1, false, true},
	}
	without := func(run string, dj float64) []pt {
		var out []pt
		for _, p := range all {
			if p.run != run {
				p.j += dj
				out = append(out, p)
			}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		break_ func([]Run)
		basis  string
		want   []pt
	}{
		{"every point", func([]Run) {}, BasisSteady, all},
		// A latency a failed check invalidates (first_token_times_exact on
		// a shared machine) is still drawn: the decision decides on it.
		{"latency invalidated", func(runs []Run) {
			for _, r := range runs {
				failCheck(r, "first_token_times_exact", []string{"tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms"})
			}
		}, BasisSteady, all},
		// A J/token a failed check invalidates is not: the decision never
		// weighs it (250 W c32, which misses the SLO: the basis stays
		// steady state, every candidate has it).
		{"J/token invalidated", func(runs []Run) {
			failCheck(runs[1], "window_check", []string{"steady_state_j_per_token"})
		}, BasisSteady, without("cap250-c32", 0)},
		// The same on the formal window (no run has steady state): formal
		// J/token is the steady one + 0.01.
		{"formal J/token invalidated", func(runs []Run) {
			for _, r := range runs {
				delete(r.Results.Values, "steady_state_j_per_token")
			}
			failCheck(runs[1], "window_check", []string{"formal_j_per_token"})
		}, BasisFormal, without("cap250-c32", 0.01)},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := pointsCapSweep()
			c.break_(runs)
			rep := builtin(t).Compare(runs)
			if rep.Decision == nil || rep.Decision.Run != "cap300-c32" || rep.Decision.Basis != c.basis {
				t.Fatalf("decision %+v, want cap300-c32 on %s (by hand)", rep.Decision, c.basis)
			}
			dp := rep.Points
			if dp == nil {
				t.Fatal("no decided points")
			}
			if dp.LatencyMetric != "tpot_p90_ms" || dp.Bound == nil || *dp.Bound != 13 || dp.BoundLabel != "SLO: TPOT p90 ≤ 13 ms (90 % of requests)" {
				t.Errorf("x %q, bound %v %q; want tpot_p90_ms, 13 ms, SLO: TPOT p90 ≤ 13 ms (90 %% of requests)", dp.LatencyMetric, dp.Bound, dp.BoundLabel)
			}
			if dp.Basis != c.basis || dp.BasisText != BasisShort(c.basis) || dp.Run != "cap300-c32" || dp.Label != "c32 · 300 W" {
				t.Errorf("basis %q %q, run %q %q; want %s, cap300-c32, c32 · 300 W", dp.Basis, dp.BasisText, dp.Run, dp.Label, c.basis)
			}
			var got []pt
			for _, s := range dp.Series {
				for _, p := range s.Points {
					got = append(got, pt{s.Name, p.Label, p.Run, p.Latency, p.JPerToken, p.Runs, p.Chosen, p.Pareto})
					if p.GPUSetting != s.Name {
						t.Errorf("%s: GPU setting %q, want its series' %q", p.Run, p.GPUSetting, s.Name)
					}
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("points %+v\nwant %+v", got, c.want)
			}
			for i, w := range c.want {
				g := got[i]
				if g.series != w.series || g.label != w.label || g.run != w.run || g.lat != w.lat || math.Abs(g.j-w.j) > 1e-12 ||
					g.runs != w.runs || g.chosen != w.chosen || g.pareto != w.pareto {
					t.Errorf("point %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// The decided points are in compare's JSON (decided_points), and absent
// when the decision chose nothing.
func TestDecidedPointsJSON(t *testing.T) {
	rep := builtin(t).Compare(pointsCapSweep())
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"decided_points":{"latency_metric":"tpot_p90_ms","basis":"steady_state","basis_text":"steady state","bound":13,`,
		`{"latency":12.2,"j_per_token":0.26,"label":"c32 · 300 W","gpu_setting":"300 W","run":"cap300-c32","runs":2,"chosen":true,"pareto":true}`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON lacks %s", w)
		}
	}
	runs := pointsCapSweep()
	for _, r := range runs {
		r.Results.Values["slo_attainment"] = record.Result{Kind: "metric", Value: 0.5}
	}
	rep = builtin(t).Compare(runs)
	if b, _ := json.Marshal(rep); rep.Decision.Chosen || strings.Contains(string(b), "decided_points") {
		t.Errorf("no point meets the SLO: want no decision and no decided_points, got chosen %v", rep.Decision.Chosen)
	}
}
