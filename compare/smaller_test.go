package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/doc"
)

// No point qualifies (TPOT ≤ 10 ms for 90 %: a attains 0.5, b 0.6): the
// CSV keeps both "not chosen" rows, as the text does, and says nothing
// was chosen.
func TestDecisionCSVKeepsRejectionsWithoutChoice(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, att float64) Run {
		return capRun(id, conc, "", 0.2, 10, 0.9, map[string]any{"tpot_p90_ms": 20.0, "slo_attainment": att})
	}
	rep := p.Compare([]Run{r("a", 8, 0.5), r("b", 16, 0.6)})
	if rep.Decision.Chosen {
		t.Fatalf("chosen %+v", rep.Decision)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatCSV); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"not_chosen,,,,,a,reason,,,misses the SLO: attainment 0.5000 < target 0.9", "not_chosen,,,,,b,reason,,,misses the SLO: attainment 0.6000 < target 0.9",
		"decision,,,,,,chosen,false,,no point meets the SLO"} {
		if !strings.Contains(out, want) {
			t.Errorf("CSV lacks %q:\n%s", want, out)
		}
	}
}

// A point with no latency value under --latency-max is rejected for
// lacking it, not as "latency above --latency-max". By hand: a has
// tpot_p50_ms 5 ≤ 10: chosen; b has none.
func TestNoLatencyValueHasItsOwnReason(t *testing.T) {
	p := builtin(t)
	a := frontierRun("a", 1, 2.0, 2.1, 5, nil)
	b := frontierRun("b", 8, 1.0, 1.1, 5, nil)
	delete(b.Results.Values, "tpot_p50_ms")
	d := p.CompareWith([]Run{a, b}, FrontierOptions{LatencyMax: 10}).Decision
	if d.Run != "a" || len(d.Rejected) != 1 {
		t.Fatalf("decision %+v", d)
	}
	if why := d.Rejected[0].Reason; why != "misses the SLO: no tpot_p50_ms value in its results, so it cannot be held to the bound (10 ms)" {
		t.Errorf("reason %q", why)
	}
}

// Every basis a decision can be made on is named in words, never by its
// code (the per-good-token bases were shown as "good_token").
func TestBasisNamedInWords(t *testing.T) {
	for basis, want := range map[string]string{
		BasisSteady:   "steady-state J/token",
		BasisFormal:   "formal-window J/token",
		BasisGoodTok:  "J per good token (formal window, tokens of requests meeting the SLO)",
		BasisGoodTokS: "J per good token (steady state, tokens of requests meeting the SLO)",
	} {
		if got := basisName(basis); got != want {
			t.Errorf("basisName(%q) = %q, want %q", basis, got, want)
		}
	}
}
