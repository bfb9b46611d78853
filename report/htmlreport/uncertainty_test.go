package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
)

// tieRuns are two power limits at c32, each run twice, under no SLO:
// steady J/token 0.270 and 0.272 at 300 W, 0.271 and 0.273 at 350 W.
// By hand, each point's 95 % t-interval is its mean ± t(0.975, 1) · s /
// √2 with s = 0.002/√2 = 0.0014142: half width 12.7062 · 0.0014142 /
// 1.4142 = 0.012706; 300 W: 0.271 ± 0.012706 = [0.2583, 0.2837], 350 W:
// 0.272 ± 0.012706 = [0.2593, 0.2847]. They overlap: not separable.
func tieRuns() []compare.Run {
	var runs []compare.Run
	for _, c := range []struct {
		id, watts string
		j         float64
	}{{"w300-a", "300", 0.270}, {"w300-b", "300", 0.272}, {"w350-a", "350", 0.271}, {"w350-b", "350", 0.273}} {
		r := pointRun(c.id, "sim", 32, false, map[string]float64{"steady_state_j_per_token": c.j, "formal_j_per_token": c.j + 0.01,
			"full_lifecycle_j_per_token": c.j * 1.5, "startup_energy_j": 100, "release_energy_j": 10, "formal_output_tokens": 10000, "tpot_p50_ms": 12})
		r.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: c.watts, Controller: "sim"}
		runs = append(runs, r)
	}
	return runs
}

// The decision names its interval beside the chosen J/token and its
// basis in words beside every figure that depends on it; a runner-up
// whose interval overlaps the choice's is shown as "not separable from"
// the choice, naming both points.
func TestDecisionShowsIntervalAndTie(t *testing.T) {
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	runs := tieRuns()
	rep := prof.Compare(runs)
	d := rep.Decision
	if d == nil || !d.Chosen || d.RunnerUp == nil || d.RunnerUp.Separable {
		t.Fatalf("decision %+v, want a choice and a runner-up not separable from it", d)
	}
	ci := map[string]string{"w300-a": "0.2583–0.2837", "w350-a": "0.2593–0.2847"} // by hand, above
	var buf bytes.Buffer
	if err := WriteCompare(&buf, rep, runs, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	card := section(page, `data-figure="j_per_token"`, "</div></div>")
	if !strings.Contains(card, ci[d.Run]) || !strings.Contains(card, "steady state") {
		t.Errorf("the J/token card does not show the interval %s and the basis in words: %s", ci[d.Run], card)
	}
	tie := section(page, `id="decision-tie"`, "</p>")
	if !strings.Contains(tie, "Not separable") || !strings.Contains(tie, d.RunnerUp.Run) || !strings.Contains(tie, d.RunnerUp.Label) || !strings.Contains(tie, d.Label) {
		t.Errorf("the decision does not say the runner-up %s (%s) is not separable from %s: %q", d.RunnerUp.Run, d.RunnerUp.Label, d.Label, tie)
	}
	if ru := section(page, `class="runner-up"`, "</p>"); !strings.Contains(ru, "J/token (steady state)") {
		t.Errorf("the runner-up's J/token does not name its basis: %s", ru)
	}
}
