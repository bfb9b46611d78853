package htmlreport

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
)

// capPoint is one point of capSweep: its power limit, concurrency,
// formal J/token, TPOT p90 and p99 and SLO attainment.
type capPoint struct {
	watts, conc        int
	j, p90, p99, att   float64
	wantMeets, optimal bool
}

// capSweepPoints are a power-limit sweep under a TPOT SLO of 13 ms for
// 90 % of requests (p90), at two concurrencies per limit. By hand:
// 250 W c32 misses it (p90 14 ms > 13, attainment 0.85 < 0.9); the
// others meet it. Per good token (J / attainment): 250 W c16 0.30/0.97 =
// 0.3093, 300 W c16 0.32/0.98 = 0.3265, 300 W c32 0.27/0.93 = 0.2903,
// 350 W c16 0.34/0.99 = 0.3434, 350 W c32 0.29/0.95 = 0.3053. The
// lowest meeting the SLO is 300 W c32 on every basis the runs carry
// (formal 0.27, steady 0.26, per good token 0.2903).
var capSweepPoints = []capPoint{
	{watts: 250, conc: 16, j: 0.30, p90: 10, p99: 11, att: 0.97, wantMeets: true},
	{watts: 250, conc: 32, j: 0.25, p90: 14, p99: 15, att: 0.85},
	{watts: 300, conc: 16, j: 0.32, p90: 9, p99: 10, att: 0.98, wantMeets: true},
	{watts: 300, conc: 32, j: 0.27, p90: 12, p99: 12.5, att: 0.93, wantMeets: true, optimal: true},
	{watts: 350, conc: 16, j: 0.34, p90: 8.5, p99: 9, att: 0.99, wantMeets: true},
	{watts: 350, conc: 32, j: 0.29, p90: 11, p99: 12, att: 0.95, wantMeets: true},
}

func capRunID(w, c int) string { return "cap" + strconv.Itoa(w) + "-c" + strconv.Itoa(c) }

// basisValue is a capPoint's J/token on a basis, by hand: formal j,
// steady j - 0.01, per good token j / attainment.
func (c capPoint) basisValue(basis string) float64 {
	switch basis {
	case compare.BasisSteady:
		return c.j - 0.01
	case compare.BasisGoodTok:
		return c.j / c.att
	}
	return c.j
}

// capSweep is capSweepPoints as evaluated runs, each with its power
// limit in run.json's gpu_settings.
func capSweep() []compare.Run {
	var runs []compare.Run
	for _, c := range capSweepPoints {
		r := pointRun(capRunID(c.watts, c.conc), "sim", c.conc, false, map[string]float64{
			"steady_state_j_per_token": c.basisValue(compare.BasisSteady), "formal_j_per_token": c.j, "full_lifecycle_j_per_token": c.j * 1.5,
			"startup_energy_j": 100, "release_energy_j": 10, "formal_output_tokens": 10000, "tpot_p50_ms": c.p90 - 2,
			"slo_attainment": c.att, "output_throughput_tok_s": 50 * float64(c.conc), "goodput_tok_s": 50 * float64(c.conc) * c.att})
		for name, v := range map[string]float64{"tpot_p90_ms": c.p90, "tpot_p99_ms": c.p99, "j_per_good_token": c.basisValue(compare.BasisGoodTok)} {
			r.Results.Order = append(r.Results.Order, name)
			r.Results.Values[name] = record.Result{Kind: "metric", Value: v}
		}
		r.Meta.Parameters["slo_tpot_ms"], r.Meta.Parameters["slo_attainment_target"] = 13.0, 0.9
		r.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: strconv.Itoa(c.watts), Controller: "sim"}
		runs = append(runs, r)
	}
	return runs
}

func capSweepReport(t *testing.T) (*compare.Report, []compare.Run) {
	t.Helper()
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	runs := capSweep()
	return prof.Compare(runs), runs
}

// The comparison's chart of a cap sweep: the decision's basis against
// the latency its SLO's target implies (tpot_p90_ms for 0.9, not p50 or
// p99), the SLO's bound (13 ms) as its line, one series per power limit,
// each point labelled with its load and setting, and the decision's run
// (300 W c32, by hand) ringed.
func TestCapSweepChart(t *testing.T) {
	rep, runs := capSweepReport(t)
	d := rep.Decision
	if d == nil || !d.Chosen || d.Run != "cap300-c32" {
		t.Fatalf("decision %+v, want cap300-c32 (by hand)", d)
	}
	_, fr := buildCompare(rep, runs)
	if fr == nil {
		t.Fatal("no chart")
	}
	if fr.XName != "tpot_p90_ms" {
		t.Errorf("x axis %q, want tpot_p90_ms (the SLO's attainment 0.9 implies p90)", fr.XName)
	}
	if fr.Bound == nil || *fr.Bound != 13 || !strings.Contains(fr.BoundLabel, "TPOT p90 ≤ 13 ms") {
		t.Errorf("SLO line %v %q, want 13 ms named TPOT p90 ≤ 13 ms", fr.Bound, fr.BoundLabel)
	}
	if !strings.Contains(fr.YName, basisWords(d.Basis)) {
		t.Errorf("y axis %q does not name the decision's basis %s", fr.YName, d.Basis)
	}
	if fr.Best != d.Run {
		t.Errorf("ringed %q, want the decision's %q", fr.Best, d.Run)
	}
	var names []string
	for _, s := range fr.Series {
		names = append(names, s.Name)
	}
	if strings.Join(names, "|") != "250 W|300 W|350 W" {
		t.Fatalf("series %q, want one per power limit: 250 W|300 W|350 W", names)
	}
	for _, s := range fr.Series {
		for i, run := range s.Runs {
			var c capPoint
			for _, p := range capSweepPoints {
				if capRunID(p.watts, p.conc) == run {
					c = p
				}
			}
			want := "c" + strconv.Itoa(c.conc) + " · " + strconv.Itoa(c.watts) + " W"
			if s.Labels[i] != want || s.X[i] != c.p90 || math.Abs(s.Y[i]-c.basisValue(d.Basis)) > 1e-12 {
				t.Errorf("point %s: %q at (%g, %g), want %q at (%g, %g)", run, s.Labels[i], s.X[i], s.Y[i], want, c.p90, c.basisValue(d.Basis))
			}
		}
	}
}

// The cap sweep's page shows the cap: a GPU-setting column in the runs,
// not-chosen and order tables, the chosen point's label in the decision,
// and the GPU-settings view.
func TestCapSweepPageShowsSettings(t *testing.T) {
	rep, runs := capSweepReport(t)
	var buf bytes.Buffer
	if err := WriteCompare(&buf, rep, runs, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, id := range []string{"runs-table", "rejected-table", "ranks-table"} {
		table := section(page, `id="`+id+`"`, "</table>")
		if !strings.Contains(table, "<th>GPU setting</th>") {
			t.Errorf("%s has no GPU setting column", id)
		}
	}
	runsTable := section(page, `id="runs-table"`, "</table>")
	for _, c := range capSweepPoints {
		row := section(runsTable, `data-run-id="`+capRunID(c.watts, c.conc)+`"`, "</tr>")
		if !strings.Contains(row, "<td>"+strconv.Itoa(c.watts)+" W</td>") {
			t.Errorf("run %s's row does not show %d W: %s", capRunID(c.watts, c.conc), c.watts, row)
		}
	}
	rejected := section(page, `id="rejected-table"`, "</table>")
	if row := section(rejected, `href="#run-cap250-c32"`, "</tr>"); !strings.Contains(row, "<td>250 W</td>") {
		t.Errorf("the not-chosen 250 W c32 row does not show 250 W: %s", row)
	}
	if chosen := section(page, `id="decision-chosen"`, "</p>"); !strings.Contains(chosen, "c32 · 300 W") {
		t.Errorf("the decision does not name the chosen point c32 · 300 W: %s", chosen)
	}
	if gs := section(page, `id="gpu-settings"`, "</section>"); gs == "" || !strings.Contains(gs, "300 W") {
		t.Errorf("no GPU-settings view naming 300 W: %q", gs)
	}
}

// section is page from the first from to the next to after it ("" when
// from is not there).
func section(page, from, to string) string {
	i := strings.Index(page, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], to)
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j+len(to)]
}
