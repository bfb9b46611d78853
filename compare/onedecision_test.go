package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// capRun is a run of model m on engine sim at concurrency conc under power
// limit cap ("": the default), carrying a TPOT SLO of sloMs at attainment
// target, with its figures (values: tpot_p50_ms, tpot_p90_ms,
// tpot_p99_ms, slo_attainment, j_per_good_token, formal_j_per_token, ...).
// steady < 0: steady state not reached.
func capRun(id string, conc int, limit string, steady, sloMs, target float64, values map[string]any) Run {
	r := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: steady, full: 1, tokens: 100, values: values}),
		map[string]any{"mode": "concurrency", "concurrency": conc, "slo_tpot_ms": sloMs, "slo_attainment_target": target})
	if steady < 0 {
		r.Results.Values["steady_state_reached"] = check(false, "warn", "steady state not reached")
	}
	if limit != "" {
		r.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: limit, Controller: "sim"}
	}
	return r
}

// marked collects every run id the report marks as chosen or best: the
// decision's, each frontier point marked lowest meeting the SLO, each
// GPU-settings choice; and the bases the views show.
func marked(rep *Report) (runs, bases map[string]bool) {
	runs, bases = map[string]bool{}, map[string]bool{}
	if rep.Decision.Chosen {
		runs[rep.Decision.Run] = true
		bases[rep.Decision.Basis] = true
	}
	for _, pt := range rep.Frontier {
		if pt.LowestMeetingSLO {
			runs[pt.RunID] = true
		}
		bases[pt.Basis] = true
	}
	for _, c := range rep.GPUSettings {
		if c.RunID != "" {
			runs[c.RunID] = true
		}
		bases[c.Basis] = true
	}
	return runs, bases
}

// oneAnswer checks that every view names the decision's run and basis,
// in the report and in its JSON.
func oneAnswer(t *testing.T, rep *Report, run, basis string) {
	t.Helper()
	if !rep.Decision.Chosen || rep.Decision.Run != run || rep.Decision.Basis != basis {
		t.Fatalf("decision: chosen %v run %q basis %q; want %s on %s", rep.Decision.Chosen, rep.Decision.Run, rep.Decision.Basis, run, basis)
	}
	runs, bases := marked(rep)
	if len(runs) != 1 || len(bases) != 1 {
		t.Errorf("views name runs %v on bases %v; want only %s on %s", runs, bases, run, basis)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Decision struct {
			Run string `json:"run"`
		} `json:"decision"`
		Frontier []struct {
			RunID  string `json:"run_id"`
			Basis  string `json:"basis"`
			Lowest bool   `json:"lowest_meeting_slo"`
		} `json:"frontier"`
		GPUSettings []struct {
			RunID string `json:"run_id"`
			Basis string `json:"basis"`
		} `json:"gpu_settings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, pt := range doc.Frontier {
		if pt.Lowest && pt.RunID != doc.Decision.Run || pt.Basis != basis {
			t.Errorf("JSON frontier point %s: lowest_meeting_slo %v basis %s; decision.run %s on %s", pt.RunID, pt.Lowest, pt.Basis, doc.Decision.Run, basis)
		}
	}
	for _, c := range doc.GPUSettings {
		if c.RunID != "" && c.RunID != doc.Decision.Run || c.Basis != basis {
			t.Errorf("JSON gpu_settings: run %q basis %s; decision.run %s on %s", c.RunID, c.Basis, doc.Decision.Run, basis)
		}
	}
}

// A cap matrix: 2 loads × 2 power limits, every run carrying the SLO TPOT
// ≤ 50 ms for 99 % of requests (all attain 0.995), and --latency-max 20.
// The decision holds tpot_p99_ms (the SLO's metric) to 20 ms; the
// GPU-settings view used to hold tpot_p50_ms to it ("4 of 4 meet") and
// choose on J per good token. By hand:
//
//	run      load  cap    steady  good tok  tpot_p50  tpot_p99  verdict
//	c8-150   c8    150 W  0.10    0.105     15        22        misses: 22 > 20
//	c8-250   c8    250 W  0.12    0.125     12        18        meets
//	c16-150  c16   150 W  0.08    0.085     18        25        misses: 25 > 20 (the old GPU-settings choice)
//	c16-250  c16   250 W  0.11    0.09      14        19        meets: lowest steady, chosen
//
// Every candidate has steady state: basis steady. 2 of 4 points meet the
// SLO. Every view names c16-250 on steady state.
func TestOneDecisionCapMatrix(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, limit string, steady, good, p50, p99 float64) Run {
		return capRun(id, conc, limit, steady, 50, 0.99, map[string]any{"tpot_p50_ms": p50, "tpot_p99_ms": p99, "slo_attainment": 0.995,
			"j_per_good_token": good, "j_per_good_token_steady": good, "formal_j_per_token": steady + 0.01})
	}
	runs := []Run{r("c8-150", 8, "150", 0.10, 0.105, 15, 22), r("c8-250", 8, "250", 0.12, 0.125, 12, 18),
		r("c16-150", 16, "150", 0.08, 0.085, 18, 25), r("c16-250", 16, "250", 0.11, 0.09, 14, 19)}
	rep := p.CompareWith(runs, FrontierOptions{LatencyMax: 20})
	oneAnswer(t, rep, "c16-250", BasisSteady)
	if len(rep.GPUSettings) != 1 {
		t.Fatalf("gpu settings %+v", rep.GPUSettings)
	}
	c := rep.GPUSettings[0]
	if c.MeetingSLO != 2 || c.Points != 4 || c.PowerLimitW != "250" || c.LatencyMetric != "tpot_p99_ms" || *c.JPerToken != 0.11 || c.Label != "c16 · 250 W" {
		t.Errorf("gpu settings %+v", c)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"chat · m · sim: the decision's choice, c16 · 250 W (run c16-250): 0.1100 J/token (steady-state J/token), tpot_p99_ms 19.00 ms; 2 of 4 setting × load points meet the SLO",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The CSV names each run's setting and label.
	buf.Reset()
	if err := Render(&buf, rep, doc.FormatCSV); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{",c16-250,gpu_setting,250 W,,label c16 · 250 W,", ",c8-150,gpu_setting,150 W,,label c8 · 150 W,"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("CSV lacks %q:\n%s", want, buf.String())
		}
	}
}

// A power-limit search at one load (c32), the runs carrying TPOT ≤ 10 ms
// for 90 % of requests. The GPU-settings view used to hold every point to
// no attainment at all ("4 of 4 meet") and choose on J per good token. By
// hand:
//
//	run   cap    steady  good tok  attainment  verdict
//	p250  250 W  0.150   0.20      0.85        misses: 0.85 < 0.9
//	p275  275 W  0.160   0.17      0.93        meets: lowest steady, chosen
//	p350  350 W  0.170   0.175     0.95        meets
//	p450  450 W  0.180   0.165     0.97        meets (the old choice: lowest good tok)
//
// 3 of 4 meet; every view names p275 on steady state.
func TestOneDecisionCapSearch(t *testing.T) {
	p := builtin(t)
	r := func(id, limit string, steady, good, att float64) Run {
		return capRun(id, 32, limit, steady, 10, 0.9, map[string]any{"tpot_p50_ms": 6.0, "tpot_p90_ms": 8.0, "tpot_p99_ms": 12.0, "slo_attainment": att,
			"j_per_good_token": good, "j_per_good_token_steady": good, "formal_j_per_token": steady})
	}
	runs := []Run{r("p250", "250", 0.15, 0.20, 0.85), r("p275", "275", 0.16, 0.17, 0.93), r("p350", "350", 0.17, 0.175, 0.95), r("p450", "450", 0.18, 0.165, 0.97)}
	rep := p.Compare(runs)
	oneAnswer(t, rep, "p275", BasisSteady)
	if len(rep.GPUSettings) != 1 {
		t.Fatalf("gpu settings %+v", rep.GPUSettings)
	}
	if c := rep.GPUSettings[0]; c.MeetingSLO != 3 || c.Points != 4 || c.PowerLimitW != "275" || *c.JPerToken != 0.16 {
		t.Errorf("gpu settings %+v", c)
	}
}

// A concurrency SLO search (TPOT ≤ 10 ms for 90 %), no load reaching
// steady state: the decision is on the formal window. The frontier used to
// highlight c16, the lowest J per good token, while the decision chose
// c22 on formal J/token. By hand:
//
//	run  formal  good tok  attainment  tpot_p90  verdict
//	c8   0.5000  0.52      0.99        5         meets
//	c16  0.4500  0.46      0.95        7         meets (the old frontier highlight)
//	c22  0.4231  0.47      0.92        9         meets: lowest formal, chosen
//	c24  0.4000  0.55      0.85        11        misses: 0.85 < 0.9
//
// Frontier on formal J/token: sorted by latency c8, c16, c22, c24, each
// lower J/token at higher latency, so all four are Pareto-optimal; only c22
// is marked.
func TestOneDecisionConcurrencySearch(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, formal, good, att, p90 float64) Run {
		return capRun(id, conc, "", -1, 10, 0.9, map[string]any{"tpot_p50_ms": p90 / 2, "tpot_p90_ms": p90, "tpot_p99_ms": p90 + 1, "slo_attainment": att,
			"j_per_good_token": good, "formal_j_per_token": formal})
	}
	runs := []Run{r("c8", 8, 0.5, 0.52, 0.99, 5), r("c16", 16, 0.45, 0.46, 0.95, 7), r("c22", 22, 0.4231, 0.47, 0.92, 9), r("c24", 24, 0.4, 0.55, 0.85, 11)}
	rep := p.Compare(runs)
	oneAnswer(t, rep, "c22", BasisFormal)
	if len(rep.Frontier) != 4 {
		t.Fatalf("frontier %+v", rep.Frontier)
	}
	for i, want := range []float64{0.5, 0.45, 0.4231, 0.4} {
		if pt := rep.Frontier[i]; *pt.JPerToken != want || !pt.Pareto {
			t.Errorf("frontier point %s: %v pareto %v, want %v pareto", pt.RunID, *pt.JPerToken, pt.Pareto, want)
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	if want := "The decision's choice: run c22 (c22 · default), 0.4231 J/token (formal-window J/token)"; !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	if err := Render(&buf, rep, doc.FormatCSV); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "c16,lowest_meeting_slo") || !strings.Contains(buf.String(), "c22,lowest_meeting_slo,true") {
		t.Errorf("CSV marks another run:\n%s", buf.String())
	}
}
