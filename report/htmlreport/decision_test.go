package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/browsertest"
)

// pointRun is an evaluated run of engine's configuration at concurrency
// conc, its results given by name (formal_j_per_token, ttft_p99_ms, ...);
// slo adds a TTFT SLO of 300 ms at 99 % to its parameters.
func pointRun(id, engine string, conc int, slo bool, values map[string]float64) compare.Run {
	params := map[string]any{"mode": "concurrency", "concurrency": float64(conc)}
	if slo {
		params["slo_ttft_ms"], params["slo_attainment_target"] = 300.0, 0.99
	}
	res := &record.Results{RunID: id, Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"}, Values: map[string]record.Result{}}
	for _, name := range []string{"steady_state_j_per_token", "formal_j_per_token", "full_lifecycle_j_per_token", "startup_energy_j", "release_energy_j",
		"formal_output_tokens", "ttft_p99_ms", "tpot_p50_ms", "slo_attainment", "output_throughput_tok_s", "goodput_tok_s"} {
		if v, ok := values[name]; ok {
			res.Order = append(res.Order, name)
			res.Values[name] = record.Result{Kind: "metric", Value: v}
		} else if name != "slo_attainment" && name != "goodput_tok_s" && name != "tpot_p50_ms" {
			res.Order = append(res.Order, name)
			res.Values[name] = record.Result{Kind: "metric", Value: nil, Note: "not applicable: not measured"}
		}
	}
	meta := record.Meta{FormatVersion: 1, RunID: id, Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"},
		Engine: record.EngineInfo{Kind: engine, Model: "m"}, Status: record.StatusComplete, Labels: map[string]string{"scenario": "chat"}, Parameters: params}
	return compare.Run{Dir: "runs/" + id, Meta: meta, Results: res}
}

// sloPoints are three load points under a TTFT SLO of 300 ms at 99 %. By
// hand: c1 (2.0 J/token, 120 ms, 1.0) and c8 (1.2, 250 ms, 0.995) meet
// it, c16 (0.8, 420 ms, 0.93) misses it; the lowest J/token meeting it
// is c8's 1.2 (steady state: every candidate has it).
func sloPoints() []compare.Run {
	pt := func(id string, conc int, j, ttft, att float64) compare.Run {
		return pointRun(id, "sim", conc, true, map[string]float64{"steady_state_j_per_token": j, "formal_j_per_token": j + 0.1,
			"full_lifecycle_j_per_token": j * 2, "startup_energy_j": 100, "release_energy_j": 10, "formal_output_tokens": 1000,
			"ttft_p99_ms": ttft, "slo_attainment": att, "output_throughput_tok_s": 100 * float64(conc), "goodput_tok_s": 90 * float64(conc)})
	}
	return []compare.Run{pt("c1", 1, 2.0, 120, 1.0), pt("c8", 8, 1.2, 250, 0.995), pt("c16", 16, 0.8, 420, 0.93)}
}

func comparePage(t *testing.T, runs []compare.Run) string {
	t.Helper()
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	rep := prof.Compare(runs)
	return writeFile(t, t.TempDir(), "compare.html", func(f *os.File) error { return WriteCompare(f, rep, runs, Options{Version: "test"}) })
}

// The comparison page in Chromium opens with the decision (the SLO and
// the chosen run, before any table); the frontier is drawn from zero on
// both axes against the SLO's metric, each point labelled by its load,
// the SLO's bound as a line and the chosen point ringed; the frontier
// table lists load, J/token, latency, attainment, throughput and goodput.
func TestDecisionPageInBrowser(t *testing.T) {
	p := browsertest.Open(t, comparePage(t, sloPoints()))
	defer p.CheckClean(t)
	first := browsertest.Eval[string](t, p, `document.querySelector('section.compare').firstElementChild.id`)
	if first != "decision" {
		t.Errorf("the comparison opens with #%s, want the decision", first)
	}
	slo := browsertest.Eval[string](t, p, `document.getElementById('decision-slo').textContent`)
	if !strings.Contains(slo, "TTFT ≤ 300 ms for 99 % of requests") {
		t.Errorf("SLO shown as %q", slo)
	}
	chosen := browsertest.Eval[string](t, p, `document.getElementById('decision-chosen').textContent`)
	if !strings.Contains(chosen, "Chosen: run c8") || !strings.Contains(chosen, "concurrency=8") {
		t.Errorf("chosen shown as %q", chosen)
	}
	if above := browsertest.Eval[bool](t, p, `document.getElementById('decision').getBoundingClientRect().bottom <= document.getElementById('runs-table').getBoundingClientRect().top`); !above {
		t.Error("the decision is not above the tables")
	}
	jpt := browsertest.Eval[string](t, p, `document.querySelector('#decision [data-figure=j_per_token] .v').textContent`)
	if !strings.HasPrefix(jpt, "1.2000 J/token") {
		t.Errorf("chosen J/token %q, want 1.2000 J/token", jpt)
	}
	why := browsertest.Eval[string](t, p, `document.getElementById('rejected-table').textContent`)
	if !strings.Contains(why, "misses the SLO: attainment 0.9300 < target 0.99; ttft_p99_ms 420.00 ms > bound 300 ms (+40.0 %)") {
		t.Errorf("c16 not said to miss the SLO by how much: %q", why)
	}

	// The runs table has each run's load (after its GPU setting).
	load := browsertest.Eval[string](t, p, `document.querySelector('#runs-table tr[data-run-id=c8]').cells[6].textContent`)
	if load != "concurrency=8 mode=concurrency" {
		t.Errorf("c8's load in the runs table: %q", load)
	}

	fr := chart(t, p, "frontier-chart")
	if !fr.Present || fr.XMin != 0 || fr.YMin != 0 {
		t.Errorf("frontier chart %+v, want both axes from zero", fr)
	}
	ds := browsertest.Eval[map[string]string](t, p, `Object.assign({}, document.getElementById('frontier-chart').dataset)`)
	if ds["labels"] != "3" || ds["slo"] != "300" || ds["best"] != "c8" {
		t.Errorf("frontier chart drew %v, want 3 labels, the SLO line at 300 and c8 ringed", ds)
	}
	if x := browsertest.Eval[string](t, p, `window.jbCharts['frontier-chart'].axes[0].label`); x != "ttft_p99_ms" {
		t.Errorf("x axis %q, want the SLO's metric ttft_p99_ms", x)
	}
	rows := browsertest.Eval[[]string](t, p, `Array.prototype.map.call(document.querySelectorAll('#frontier-table tbody tr'), function(r){
		return Array.prototype.map.call(r.cells, function(c){return c.textContent;}).slice(2, 10).join('|');})`)
	// (after configuration and GPU setting) load, J/token, basis, latency metric, ms, attainment, throughput, goodput
	want := []string{"concurrency=1 mode=concurrency|2.0000|steady state|ttft_p99_ms|120.00|100.0 %|100.0|90.0",
		"concurrency=8 mode=concurrency|1.2000|steady state|ttft_p99_ms|250.00|99.5 %|800.0|720.0",
		"concurrency=16 mode=concurrency|0.8000|steady state|ttft_p99_ms|420.00|93.0 %|1600.0|1440.0"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("frontier table:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// Two points 0.00022 ms apart with J/token 0.2487 and 0.2489 (0.08 %):
// the axes start at zero, so the two points lie within a few pixels of
// each other, and the x ticks are distinct short labels (whole ms).
func TestTwoPointChartInBrowser(t *testing.T) {
	pt := func(id string, conc int, j, ttft float64) compare.Run {
		return pointRun(id, "sim", conc, false, map[string]float64{"formal_j_per_token": j, "steady_state_j_per_token": j, "full_lifecycle_j_per_token": j,
			"startup_energy_j": 1, "release_energy_j": 1, "formal_output_tokens": 100, "tpot_p50_ms": ttft})
	}
	p := browsertest.Open(t, comparePage(t, []compare.Run{pt("a", 1, 0.2487, 17.33941), pt("b", 2, 0.2489, 17.33963)}))
	defer p.CheckClean(t)
	fr := chart(t, p, "frontier-chart")
	if fr.XMin != 0 || fr.YMin != 0 {
		t.Errorf("two-point chart from x %g, y %g; want both from 0", fr.XMin, fr.YMin)
	}
	type ax struct {
		Ticks  []string
		DX, DY float64
	}
	got := browsertest.Eval[ax](t, p, `(function(){
		var u = window.jbCharts['frontier-chart'];
		return {Ticks: u.axes[0]._values || [], DX: Math.abs(u.valToPos(17.33963,'x') - u.valToPos(17.33941,'x')),
			DY: Math.abs(u.valToPos(0.2489,'y') - u.valToPos(0.2487,'y'))};
	})()`)
	if got.DX > 2 || got.DY > 2 {
		t.Errorf("the points lie %.1f px and %.1f px apart; a 0.08 %% difference should be a few pixels at most", got.DX, got.DY)
	}
	seen := map[string]bool{}
	for _, tk := range got.Ticks {
		if seen[tk] {
			t.Errorf("x tick %q repeats: %v", tk, got.Ticks)
		}
		seen[tk] = true
	}
	if len(got.Ticks) < 2 || len(got.Ticks) > 30 {
		t.Errorf("x ticks %v", got.Ticks)
	}
	for _, tk := range got.Ticks {
		if len(tk) > 5 {
			t.Errorf("x tick %q is long: ticks %v", tk, got.Ticks)
		}
	}
}

// Runs against an external server have no lifecycle: each configuration
// at one load, only a formal J/token. The runs table shows it in its
// formal column and the chart plots it (not an empty full-lifecycle).
func TestExternalRunsPlotFormal(t *testing.T) {
	ext := func(id, engine string, j, tpot float64) compare.Run {
		return pointRun(id, engine, 4, false, map[string]float64{"formal_j_per_token": j, "formal_output_tokens": 100, "tpot_p50_ms": tpot})
	}
	runs := []compare.Run{ext("x1", "openai", 0.5, 20), ext("x2", "vllm", 0.7, 25)}
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	rep := prof.Compare(runs)
	_, fr := buildCompare(rep, runs)
	if fr == nil || fr.YName != "J/token (formal window)" || len(fr.Series) != 2 || fr.Series[0].Y[0] != 0.5 {
		t.Fatalf("frontier %+v, want two series of formal J/token", fr)
	}
	var buf bytes.Buffer
	if err := WriteCompare(&buf, rep, runs, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `<td class="num">0.5000</td>`) {
		t.Error("the runs table does not show x1's formal J/token 0.5000")
	}
}

// A headline card is headed by the metric's name in words, with its
// boundary; its unit stands beside the value.
func TestMetricLabel(t *testing.T) {
	for _, tc := range []struct{ name, unit, want string }{
		{"steady_state_j_per_token", "J/token", "Steady state energy per output token"},
		{"j_per_good_token", "J/token", "Energy per good output token"},
		{"ttft_p99_ms", "ms", "TTFT p99"},
		{"output_throughput_tok_s", "tok/s", "Output throughput"},
		{"startup_energy_j", "J", "Startup energy"},
		{"average_power_w", "W", "Average power"},
		{"slo_attainment", "fraction", "SLO attainment"},
	} {
		if got := metricLabel(tc.name, tc.unit); got != tc.want {
			t.Errorf("metricLabel(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
	in := evaluate(t, synthRun(t, filepath.Join(t.TempDir(), "r"), "r", "m"))
	v, err := buildRun(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Headline {
		if strings.Contains(h.Name, "j_per_token") && h.Boundary != "GPU" {
			t.Errorf("card %s: boundary %q, want GPU", h.Name, h.Boundary)
		}
	}
}
