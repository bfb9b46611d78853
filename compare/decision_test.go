package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// sloRun is a load point of engine's configuration whose run carries a
// TTFT SLO of 300 ms at 99 % (its parameters), with its attainment.
func sloRun(id, engine string, conc int, steady, formal, tpot, att float64) Run {
	r := frontierRun(id, conc, steady, formal, tpot, map[string]any{"slo_attainment": att, "output_throughput_tok_s": 1000 / formal, "goodput_tok_s": 900 / formal})
	r.Meta.Engine.Kind = engine
	r.Meta.Parameters["slo_ttft_ms"] = 300.0
	r.Meta.Parameters["slo_attainment_target"] = 0.99
	return r
}

// Two configurations (engines sim and vllm), every run carrying a TTFT
// SLO of 300 ms at 99 %; ttft_p99_ms is 10 × the tpot given. By hand:
//
//	run  engine  load  steady  attainment  ttft_p99  verdict
//	a1   sim     c1    2.0     0.999       200       meets; 2.0 > 1.0 (+100 %)
//	a8   sim     c8    1.2     0.995       250       meets; runner-up (1.2), dominated by b4 (1.0 ≤ 1.2, 240 ≤ 250)
//	a16  sim     c16   0.8     0.95        400       misses: 0.95 < 0.99, 400 > 300 (+33.3 %)
//	b4   vllm    c4    1.0     0.992       240       meets: the lowest, chosen
//	b8   vllm    c8    1.5     0.999       260       meets; dominated by b4 (1.0 ≤ 1.5, 240 ≤ 260)
//
// Every candidate has steady state: basis steady. The latency axis is the
// SLO's own metric, ttft_p99_ms, with the SLO's bound, 300 ms.
func TestDecisionAcrossConfigurations(t *testing.T) {
	p := builtin(t)
	runs := []Run{sloRun("a1", "sim", 1, 2.0, 2.1, 20, 0.999), sloRun("a8", "sim", 8, 1.2, 1.3, 25, 0.995),
		sloRun("a16", "sim", 16, 0.8, 0.9, 40, 0.95), sloRun("b4", "vllm", 4, 1.0, 1.1, 24, 0.992), sloRun("b8", "vllm", 8, 1.5, 1.6, 26, 0.999)}
	rep := p.Compare(runs)
	d := rep.Decision
	if !d.Chosen || d.Run != "b4" || d.Basis != BasisSteady || *d.JPerToken != 1.0 || d.LatencyMetric != "ttft_p99_ms" || *d.Latency != 240 || *d.LatencyBound != 300 {
		t.Fatalf("decision %+v", d)
	}
	if d.SLO == nil || d.SLO.TTFTMs != 300 || d.SLO.Attainment != 0.99 || !strings.Contains(d.SLOText, "TTFT ≤ 300 ms for 99 % of requests") {
		t.Errorf("SLO %+v %q", d.SLO, d.SLOText)
	}
	if d.RunnerUp == nil || d.RunnerUp.Run != "a8" || *d.RunnerUp.JPerToken != 1.2 {
		t.Errorf("runner-up %+v", d.RunnerUp)
	}
	// throughput 1000/1.1 = 909.09, goodput 900/1.1 = 818.18
	if math.Abs(*d.Throughput-909.0909) > 1e-3 || math.Abs(*d.Goodput-818.1818) > 1e-3 {
		t.Errorf("throughput %v goodput %v", *d.Throughput, *d.Goodput)
	}
	why := map[string]string{}
	for _, r := range d.Rejected {
		why[r.Run] = r.Reason
	}
	for run, want := range map[string]string{
		"a16": "misses the SLO: attainment 0.9500 < target 0.99; ttft_p99_ms 400.00 ms > bound 300 ms (+33.3 %)",
		"a8":  "runner-up: dominated by b4 (concurrency=4 mode=concurrency): 1.0000 vs 1.2000 J/token, ttft_p99_ms 240.00 vs 250.00 ms; not separable from the choice (+20.0 %): one run per point, no interval to tell the difference from run-to-run noise",
		"b8":  "dominated by b4 (concurrency=4 mode=concurrency): 1.0000 vs 1.5000 J/token, ttft_p99_ms 240.00 vs 260.00 ms",
		"a1":  "meets the SLO at 2.0000 J/token, above the chosen 1.0000 (+100.0 %), with lower ttft_p99_ms (200.00 vs 240.00 ms)",
	} {
		if why[run] != want {
			t.Errorf("%s: %q, want %q", run, why[run], want)
		}
	}
	if len(d.Rejected) != 4 {
		t.Errorf("rejected %+v", d.Rejected)
	}
	for _, pt := range rep.Frontier {
		if pt.LatencyMetric != "ttft_p99_ms" || pt.LatencyFrom != "the SLO" {
			t.Errorf("frontier point %s against %s (%s)", pt.RunID, pt.LatencyMetric, pt.LatencyFrom)
		}
	}

	// JSON: the decision opens the document, with the fields the issue names.
	var buf bytes.Buffer
	if err := Render(&buf, rep, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "{\n  \"decision\": {") {
		t.Errorf("JSON does not open with the decision: %.80s", buf.String())
	}
	var doc struct {
		Decision map[string]any `json:"decision"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run", "load", "configuration", "basis", "j_per_token", "latency", "slo", "rejected", "runner_up"} {
		if _, ok := doc.Decision[f]; !ok {
			t.Errorf("decision lacks %q", f)
		}
	}
	// The table opens with it (after the simulated note).
	buf.Reset()
	if err := Render(&buf, rep, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[2], "Decision: the lowest J/token meeting the SLO") || !strings.HasPrefix(lines[4], "Chosen: run b4") {
		t.Errorf("table does not open with the decision:\n%s", strings.Join(lines[:min(6, len(lines))], "\n"))
	}

	// --attainment 0.999 overrides the runs' target: only a1 and b8 meet
	// it; b8 (1.5) is chosen.
	if d := p.CompareWith(runs, FrontierOptions{Attainment: 0.999}).Decision; d.Run != "b8" {
		t.Errorf("with attainment 0.999: chose %s", d.Run)
	}
}

// A check that removed a figure is named: b4's steady state is removed by
// its flag, so the candidates are compared on the formal window (a1 2.1,
// a8 1.3, b4 1.1, b8 1.6): b4 still wins, on its formal J/token 1.1, and
// the note says why the basis is formal.
func TestDecisionBasisWhenACheckRemovesSteady(t *testing.T) {
	p := builtin(t)
	b4 := sloRun("b4", "vllm", 4, 1.0, 1.1, 24, 0.992)
	b4.Results.Values["steady_state_reached"] = check(false, "warn", "steady state not reached")
	runs := []Run{sloRun("a1", "sim", 1, 2.0, 2.1, 20, 0.999), sloRun("a8", "sim", 8, 1.2, 1.3, 25, 0.995), b4, sloRun("b8", "vllm", 8, 1.5, 1.6, 26, 0.999)}
	d := p.Compare(runs).Decision
	if d.Run != "b4" || d.Basis != BasisFormal || *d.JPerToken != 1.1 || !strings.Contains(d.Note, "steady-state J/token is missing for b4 (removed by flag not_steady") {
		t.Errorf("decision %s %s %v note %q", d.Run, d.Basis, d.JPerToken, d.Note)
	}
}

// Without an SLO the decision says so and chooses the lowest J/token at
// any latency; the frontier's axis is the default, said so.
func TestDecisionWithoutSLO(t *testing.T) {
	p := builtin(t)
	rep := p.Compare([]Run{frontierRun("c1", 1, 2.0, 2.1, 20, nil), frontierRun("c8", 8, 1.2, 1.3, 30, nil)})
	d := rep.Decision
	if d.Run != "c8" || d.SLO != nil || !strings.HasPrefix(d.SLOText, "none: no run carries slo_* parameters") {
		t.Errorf("decision %+v", d)
	}
	if len(rep.Frontier) != 2 || LatencyAxisText(&rep.Frontier[0]) != "Latency axis: tpot_p50_ms (the default: no SLO in the runs; --latency picks another)" {
		t.Errorf("axis: %q", LatencyAxisText(&rep.Frontier[0]))
	}
}

// --objective usd_per_mtoken minimises the cost where the results have
// it, on the same J/token basis as the J/token shown beside it. Both runs
// reach steady state: basis steady, so the cost is usd_per_mtoken_steady:
// a (0.90 USD, J 2.0) over b (1.20 USD, J 1.2), though b has the lower
// J/token; the formal-window costs (0.95, 1.10) are not used (b would
// then be 1.10 against a's 0.95: still a, but the figure shown would be
// another basis's). Without steady state in b, the basis is the formal
// window for both: a 0.95 against b 1.10, and J/token 2.1 (formal).
func TestDecisionObjective(t *testing.T) {
	p := builtin(t)
	a := frontierRun("a", 1, 2.0, 2.1, 20, map[string]any{"usd_per_mtoken": 0.95, "usd_per_mtoken_steady": 0.9})
	b := frontierRun("b", 8, 1.2, 1.3, 30, map[string]any{"usd_per_mtoken": 1.1, "usd_per_mtoken_steady": 1.2})
	d := p.CompareWith([]Run{a, b}, FrontierOptions{Objective: "usd_per_mtoken"}).Decision
	if d.Run != "a" || d.Basis != BasisSteady || *d.JPerToken != 2.0 || *d.USDPerMToken != 0.9 || d.RunnerUp.Run != "b" || *d.RunnerUp.USDPerMToken != 1.2 || d.GCO2PerMToken != nil {
		t.Errorf("decision %+v", d)
	}
	b.Results.Values["steady_state_j_per_token"] = na("J/token", "steady state not reached")
	b.Results.Values["steady_state_reached"] = check(false, "warn", "steady state not reached")
	d = p.CompareWith([]Run{a, b}, FrontierOptions{Objective: "usd_per_mtoken"}).Decision
	if d.Run != "a" || d.Basis != BasisFormal || *d.JPerToken != 2.1 || *d.USDPerMToken != 0.95 || *d.RunnerUp.USDPerMToken != 1.1 {
		t.Errorf("formal basis: decision %+v", d)
	}
	if err := CheckObjective("watts"); err == nil {
		t.Error("objective watts accepted")
	}
}
