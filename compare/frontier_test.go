package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/doc"
)

// frontierRun is a run at one load point with its J/token and latencies.
func frontierRun(id string, conc int, steady, formal, tpot float64, extra map[string]any) Run {
	values := map[string]any{"formal_j_per_token": formal, "tpot_p50_ms": tpot, "ttft_p99_ms": tpot * 10}
	for k, v := range extra {
		values[k] = v
	}
	mode := "concurrency"
	if conc == 0 {
		mode = "unlimited"
	}
	return withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", steady: steady, full: formal * 2, tokens: 100, values: values}),
		map[string]any{"mode": mode, "concurrency": conc})
}

// Four load points of one configuration, by hand:
//
//	c1         steady 2.0  formal 2.1  tpot 20
//	c4         steady n/a  formal 1.0  tpot 22
//	c8         steady 1.2  formal 1.3  tpot 30   (dominated by c4: 1.0 ≤ 1.3 and 22 ≤ 30)
//	unlimited  steady 0.6  formal 0.7  tpot 40
//
// c4 has no steady state, so the whole frontier is on the formal window.
// Sorted by TPOT: c1, c4, c8, unlimited; Pareto: c1, c4, unlimited.
// With --latency-max 35: c1, c4, c8 meet it; the lowest J/token among them
// is c4 (1.0). Without c4 every point has steady state: steady basis.
func TestFrontierParetoAndSLO(t *testing.T) {
	p := builtin(t)
	c4 := frontierRun("c4", 4, 1.5, 1.0, 22, nil)
	c4.Results.Values["steady_state_j_per_token"] = na("J/token", "steady state not reached")
	c4.Results.Values["steady_state_reached"] = check(false, "warn", "steady state not reached")
	runs := []Run{frontierRun("un", 0, 0.6, 0.7, 40, nil), frontierRun("c8", 8, 1.2, 1.3, 30, nil), c4, frontierRun("c1", 1, 2.0, 2.1, 20, nil)}
	rep := p.CompareWith(runs, FrontierOptions{LatencyMax: 35})
	type want struct {
		run    string
		j      float64
		basis  string
		pareto bool
		best   bool
	}
	wants := []want{{"c1", 2.1, BasisFormal, true, false}, {"c4", 1.0, BasisFormal, true, true}, {"c8", 1.3, BasisFormal, false, false}, {"un", 0.7, BasisFormal, true, false}}
	if len(rep.Frontier) != len(wants) {
		t.Fatalf("%d frontier points, want %d: %+v", len(rep.Frontier), len(wants), rep.Frontier)
	}
	for i, w := range wants {
		pt := rep.Frontier[i]
		if pt.RunID != w.run || *pt.JPerToken != w.j || pt.Basis != w.basis || pt.Pareto != w.pareto || pt.LowestMeetingSLO != w.best {
			t.Errorf("point %d: %s j %v %s pareto %v best %v; want %+v", i, pt.RunID, *pt.JPerToken, pt.Basis, pt.Pareto, pt.LowestMeetingSLO, w)
		}
		if pt.LatencyMetric != "tpot_p50_ms" || pt.Model != "m" || pt.Engine != "sim" || pt.Scenario != "chat" {
			t.Errorf("point %d: %+v", i, pt)
		}
	}
	if rep.Frontier[3].Load["mode"] != "unlimited" || rep.Frontier[1].Load["concurrency"] != float64(4) {
		t.Errorf("loads %v, %v", rep.Frontier[3].Load, rep.Frontier[1].Load)
	}
	steady := p.Compare([]Run{runs[0], runs[1], runs[3]})
	if f := steady.Frontier; len(f) != 3 || f[0].Basis != BasisSteady || *f[0].JPerToken != 2.0 || *f[2].JPerToken != 0.6 {
		t.Errorf("all steady: frontier %+v", f)
	}
	// JSON: the list `frontier` with the fields the issue names.
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Frontier []map[string]any `json:"frontier"`
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model", "engine", "scenario", "load", "run_id", "j_per_token", "basis", "latency_metric", "latency", "pareto"} {
		if _, ok := out.Frontier[0][f]; !ok {
			t.Errorf("frontier item lacks %q: %v", f, out.Frontier[0])
		}
	}
	// The table names the decision's choice, its label and basis.
	buf.Reset()
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "The decision's choice: run c4 (c4 · default), 1.0000 J/token (formal-window J/token), tpot_p50_ms 22.00 ms.") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// Under an SLO a point meets it when its slo_attainment reaches the
// target: c1 0.995 ≥ 0.99 meets, c8 0.9 does not, so c1 is the lowest
// meeting it although c8's J/token is lower. The frontier shows the
// decision's basis, steady state (c1 has it: 2.0), not j_per_good_token
// (2.1): one J/token per decision.
func TestFrontierGoodTokenBasis(t *testing.T) {
	p := builtin(t)
	runs := []Run{
		frontierRun("c1", 1, 2, 2, 20, map[string]any{"j_per_good_token": 2.1, "slo_attainment": 0.995}),
		frontierRun("c8", 8, 1, 1, 40, map[string]any{"j_per_good_token": 1.4, "slo_attainment": 0.9}),
	}
	rep := p.CompareWith(runs, FrontierOptions{Latency: "ttft_p99_ms"})
	if len(rep.Frontier) != 2 {
		t.Fatalf("frontier %+v", rep.Frontier)
	}
	c1, c8 := rep.Frontier[0], rep.Frontier[1]
	if c1.Basis != BasisSteady || *c1.JPerToken != 2.0 || !c1.LowestMeetingSLO || c8.LowestMeetingSLO || *c8.MeetsSLO {
		t.Errorf("c1 %+v\nc8 %+v", c1, c8)
	}
	if *c1.Latency != 200 || c1.LatencyMetric != "ttft_p99_ms" {
		t.Errorf("latency %v %s, want ttft_p99_ms 200 (20 × 10)", *c1.Latency, c1.LatencyMetric)
	}
}

// A configuration measured at one load has no frontier; repetitions of a
// load are one point with their medians.
func TestFrontierNeedsTwoLoads(t *testing.T) {
	p := builtin(t)
	rep := p.Compare([]Run{frontierRun("a", 1, 2, 2, 20, nil)})
	if len(rep.Frontier) != 0 {
		t.Errorf("one load: frontier %+v", rep.Frontier)
	}
	rep = p.Compare([]Run{frontierRun("a", 1, 2, 2, 20, nil), frontierRun("b", 1, 3, 3, 30, nil), frontierRun("c", 1, 4, 4, 40, nil), frontierRun("d", 8, 1, 1, 50, nil)})
	// c1's three repetitions: median J 3, median TPOT 30.
	if len(rep.Frontier) != 2 || rep.Frontier[0].Runs != 3 || *rep.Frontier[0].JPerToken != 3 || *rep.Frontier[0].Latency != 30 {
		t.Errorf("frontier %+v", rep.Frontier)
	}
	if err := CheckLatency("itl_p50_ms"); err == nil {
		t.Error("latency itl_p50_ms accepted")
	}
}

// A frontier on the formal window because some loads did not reach
// steady state says so once, up front, naming those loads; one whose
// every load has steady state has no note.
func TestFrontierBasisNote(t *testing.T) {
	p := builtin(t)
	runs := []Run{frontierRun("c1", 1, 2, 2.1, 20, nil), frontierRun("c4", 4, -1, 1, 22, nil), frontierRun("c8", 8, 1.2, 1.3, 30, nil)}
	rep := p.Compare(runs)
	if len(rep.Frontier) != 3 {
		t.Fatalf("frontier %+v", rep.Frontier)
	}
	c4 := LoadText(rep.Frontier[1].Load)
	for _, pt := range rep.Frontier {
		if pt.Basis != BasisFormal || !strings.Contains(pt.BasisNote, "1 of 3 loads did not reach steady state ("+c4+";") {
			t.Errorf("%s: basis %s, note %q", pt.RunID, pt.Basis, pt.BasisNote)
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "did not reach steady state"); n != 1 {
		t.Errorf("the note is shown %d times:\n%s", n, buf.String())
	}
	rep = p.Compare([]Run{runs[0], runs[2]})
	if rep.Frontier[0].Basis != BasisSteady || rep.Frontier[0].BasisNote != "" {
		t.Errorf("all steady: %+v", rep.Frontier[0])
	}
}
