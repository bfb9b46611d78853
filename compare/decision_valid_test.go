package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// gpuEnergyMetrics are what benchmark-1.5's invalidates: [gpu_energy]
// expands to for the metrics these tests read (workflow.expandInvalidates:
// every metric whose boundary is gpu).
var gpuEnergyMetrics = []string{"steady_state_j_per_token", "full_lifecycle_j_per_token", "formal_j_per_token",
	"j_per_good_token", "j_per_good_token_steady", "startup_energy_j", "release_energy_j", "usd_per_mtoken"}

// failCheck records a failed warn check on r that invalidates metrics.
func failCheck(r Run, name string, invalidates []string) Run {
	passed := false
	r.Results.Values[name] = record.Result{Kind: "check", Value: false, Passed: &passed, Severity: "warn",
		Message: "a power sample inside a measured stage is above the bound", Invalidates: invalidates}
	r.Results.Order = append(r.Results.Order, name)
	return r
}

// Two configurations under one SLO (TTFT ≤ 300 ms at 99 %), neither with
// steady state, so the decision is on the formal window. By hand:
//
//	run  engine  formal J/token  attainment  power_within_bounds
//	ok   sim     0.2437          0.995       passed
//	bad  vllm    0.1219          0.995       FAILED, invalidates [gpu_energy]
//
// bad's formal J/token is invalidated by its own check: it cannot be
// chosen, whatever its figure. ok (0.2437) is chosen; bad is not chosen,
// and the reason names the check.
func TestDecisionNeverOnAnInvalidatedFigure(t *testing.T) {
	p := builtin(t)
	ok := sloRun("ok", "sim", 4, -1, 0.2437, 20, 0.995)
	bad := failCheck(sloRun("bad", "vllm", 4, -1, 0.1219, 20, 0.995), "power_within_bounds", gpuEnergyMetrics)
	rep := p.Compare([]Run{ok, bad})
	d := rep.Decision
	if !d.Chosen || d.Run != "ok" || d.Basis != BasisFormal || *d.JPerToken != 0.2437 {
		t.Fatalf("decision: chosen %v run %q basis %s J/token %v, want ok on formal 0.2437", d.Chosen, d.Run, d.Basis, d.JPerToken)
	}
	if d.RunnerUp != nil {
		t.Errorf("runner-up %+v: bad has no valid figure", d.RunnerUp)
	}
	why := ""
	for _, r := range d.Rejected {
		if r.Run == "bad" {
			why = r.Reason
		}
	}
	if !strings.Contains(why, "invalidated by failed check power_within_bounds") {
		t.Errorf("bad not chosen because %q, want the check named", why)
	}

	// JSON and text say the same.
	var buf bytes.Buffer
	if err := Render(&buf, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Decision struct {
			Run      string      `json:"run"`
			Rejected []Rejection `json:"rejected"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Decision.Run != "ok" || len(doc.Decision.Rejected) != 1 || !strings.Contains(doc.Decision.Rejected[0].Reason, "power_within_bounds") {
		t.Errorf("JSON decision %+v", doc.Decision)
	}
	buf.Reset()
	if err := Render(&buf, rep, "table"); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "Chosen: run ok ") || !strings.Contains(s, "power_within_bounds") {
		t.Errorf("table:\n%s", s)
	}
}

// The same with --objective usd_per_mtoken: the cost is a GPU-energy
// figure too (usd_per_mtoken in the declaration), so bad's lower cost
// (0.5 against 0.9) cannot choose it either.
func TestDecisionObjectiveInvalidated(t *testing.T) {
	p := builtin(t)
	ok := sloRun("ok", "sim", 4, -1, 0.2437, 20, 0.995)
	ok.Results.Values["usd_per_mtoken"] = metric(0.9, "USD/Mtoken")
	bad := failCheck(sloRun("bad", "vllm", 4, -1, 0.1219, 20, 0.995), "power_within_bounds", gpuEnergyMetrics)
	bad.Results.Values["usd_per_mtoken"] = metric(0.5, "USD/Mtoken")
	d := p.CompareWith([]Run{ok, bad}, FrontierOptions{Objective: "usd_per_mtoken"}).Decision
	if d.Run != "ok" || *d.USDPerMToken != 0.9 {
		t.Errorf("decision %s at %v USD/Mtoken, want ok at 0.9", d.Run, d.USDPerMToken)
	}
}

// A point meets the SLO only on an attainment its runs' checks leave
// valid: first_token_times_exact invalidates the latencies and
// slo_attainment (benchmark-1.5's declaration). By hand, one SLO (TTFT ≤ 300 ms at
// 99 %), formal J/token:
//
//	run  engine  J/token  attainment  first_token_times_exact
//	ok   sim     0.2437   0.995       passed
//	lat  vllm    0.1219   0.995       FAILED: its attainment is invalid
//
// lat's attainment cannot show it meets the SLO: it is not chosen, and
// the reason names the check; ok is chosen.
func TestDecisionSLOOnInvalidatedAttainment(t *testing.T) {
	p := builtin(t)
	ok := sloRun("ok", "sim", 4, -1, 0.2437, 20, 0.995)
	lat := failCheck(sloRun("lat", "vllm", 4, -1, 0.1219, 20, 0.995), "first_token_times_exact",
		[]string{"ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "slo_attainment", "goodput_rps", "goodput_tok_s"})
	d := p.Compare([]Run{ok, lat}).Decision
	if !d.Chosen || d.Run != "ok" {
		t.Fatalf("decision: chosen %v run %q, want ok", d.Chosen, d.Run)
	}
	if len(d.Rejected) != 1 || d.Rejected[0].Run != "lat" ||
		!strings.Contains(d.Rejected[0].Reason, "misses the SLO: slo_attainment invalidated by failed check first_token_times_exact") {
		t.Errorf("not chosen: %+v", d.Rejected)
	}
}
