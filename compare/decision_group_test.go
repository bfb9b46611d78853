package compare

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
)

// tpotRun is a run of engine's configuration at concurrency 4 carrying a
// TPOT SLO of slo ms at 99 % (its parameters), with its formal J/token
// (no steady state), tpot_p99_ms and attainment.
func tpotRun(id, engine string, slo, formal, tpotP99, att float64) Run {
	r := frontierRun(id, 4, -1, formal, tpotP99, map[string]any{"slo_attainment": att, "tpot_p99_ms": tpotP99})
	r.Meta.Engine.Kind = engine
	r.Meta.Parameters["slo_tpot_ms"] = slo
	r.Meta.Parameters["slo_attainment_target"] = 0.99
	return r
}

// decisionDoc is the decision part of compare's JSON.
type decisionDoc struct {
	Decision  Decision   `json:"decision"`
	Decisions []Decision `json:"decisions"`
}

func renderBoth(t *testing.T, rep *Report) (decisionDoc, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var doc decisionDoc
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := Render(&buf, rep, "table"); err != nil {
		t.Fatal(err)
	}
	return doc, buf.String()
}

// Runs recorded with different SLOs are decided per SLO, never pooled
// under the loosest. By hand (formal J/token, no steady state):
//
//	run  engine  slo_tpot_ms  tpot_p99  attainment  J/token  under its own SLO
//	a    sim     17           20        0.40        0.10     misses (0.40 < 0.99; 20 > 17)
//	b    vllm    1000         20        1.00        0.20     meets
//	c    sglang  17           15        0.995       0.30     meets
//
// Pooled, b (0.20) would be chosen under "TPOT ≤ 1000 ms" though it misses
// the 17 ms bound that a and c were measured against. Per SLO: under
// TPOT ≤ 17 ms c is chosen (a misses); under TPOT ≤ 1000 ms b is. The
// decision itself chooses nothing and says why; decisions has the two,
// tightest SLO first.
func TestDecisionPerSLO(t *testing.T) {
	p := builtin(t)
	rep := p.Compare([]Run{tpotRun("a", "sim", 17, 0.10, 20, 0.40), tpotRun("b", "vllm", 1000, 0.20, 20, 1), tpotRun("c", "sglang", 17, 0.30, 15, 0.995)})
	doc, text := renderBoth(t, rep)
	d := doc.Decision
	if d.Chosen || d.Run != "" || !strings.Contains(d.Note, "not decided together") {
		t.Errorf("decision: chosen %v run %q note %q, want no single choice", d.Chosen, d.Run, d.Note)
	}
	if len(doc.Decisions) != 2 {
		t.Fatalf("%d decisions, want 2 (one per SLO): %+v", len(doc.Decisions), doc.Decisions)
	}
	for i, w := range []struct {
		tpot float64
		run  string
		text string
	}{{17, "c", "TPOT ≤ 17 ms for 99 % of requests"}, {1000, "b", "TPOT ≤ 1000 ms for 99 % of requests"}} {
		g := doc.Decisions[i]
		if g.SLO == nil || g.SLO.TPOTMs != w.tpot || !g.Chosen || g.Run != w.run || !strings.Contains(g.SLOText, w.text) {
			t.Errorf("decision %d: SLO %+v %q, chosen %v %q; want %s under %v ms", i, g.SLO, g.SLOText, g.Chosen, g.Run, w.run, w.tpot)
		}
	}
	if why := doc.Decisions[0].Rejected; len(why) != 1 || why[0].Run != "a" || !strings.HasPrefix(why[0].Reason, "misses the SLO: attainment 0.4000 < target 0.99") {
		t.Errorf("under 17 ms, not chosen: %+v", why)
	}
	if len(doc.Decisions[1].Rejected) != 0 {
		t.Errorf("under 1000 ms, not chosen: %+v (a and c were not measured against it)", doc.Decisions[1].Rejected)
	}
	for _, want := range []string{"Not decided together", "SLO: TPOT ≤ 17 ms for 99 % of requests", "Chosen: run c ",
		"SLO: TPOT ≤ 1000 ms for 99 % of requests", "Chosen: run b "} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "Chosen: run c ") > strings.Index(text, "Chosen: run b ") {
		t.Errorf("table: the 17 ms decision should come first:\n%s", text)
	}

	// One SLO for every run (compare --set slo_tpot_ms=1000 records it so
	// on each): one decision under it, the user's choice. a and c meet
	// 1000 ms too (attainment as re-evaluated: 1 each here): a (0.10) is
	// chosen.
	runs := []Run{tpotRun("a", "sim", 1000, 0.10, 20, 1), tpotRun("b", "vllm", 1000, 0.20, 20, 1), tpotRun("c", "sglang", 1000, 0.30, 15, 1)}
	one := p.Compare(runs)
	if d := one.Decision; !d.Chosen || d.Run != "a" || len(one.Decisions) != 1 || one.Decisions[0].Run != "a" {
		t.Errorf("one SLO: decision %+v, %d decisions", d, len(one.Decisions))
	}
}

// A tiny but valid bound is shown, and the SLO is named even when no
// point meets it: slo_tpot_ms 1e-06, which no request meets (attainment
// 0), decides nothing under "TPOT ≤ 1e-06 ms".
func TestDecisionTinySLO(t *testing.T) {
	p := builtin(t)
	rep := p.Compare([]Run{tpotRun("a", "sim", 1e-06, 0.10, 20, 0)})
	doc, text := renderBoth(t, rep)
	d := doc.Decision
	if d.Chosen || d.SLO == nil || d.SLO.TPOTMs != 1e-06 || !strings.HasPrefix(d.SLOText, "TPOT ≤ 1e-06 ms for 99 % of requests") {
		t.Errorf("decision: chosen %v SLO %+v %q", d.Chosen, d.SLO, d.SLOText)
	}
	if !strings.Contains(text, "SLO: TPOT ≤ 1e-06 ms for 99 % of requests") || strings.Contains(text, "SLO: .") {
		t.Errorf("table:\n%s", text)
	}
	// Chosen under a tiny bound (a latency of 5e-07 ms meets 1e-06): the
	// table's bound column shows 1e-06, not 0.00.
	rep = p.Compare([]Run{tpotRun("a", "sim", 1e-06, 0.10, 5e-07, 1)})
	if _, text = renderBoth(t, rep); !strings.Contains(text, "│ 1e-06    │") {
		t.Errorf("table:\n%s", text)
	}
}

// withProfile records that r was evaluated with profile benchmark-1.5 of
// sha256 sum.
func withProfile(r Run, sum string) Run {
	ref := record.ProfileRef{Name: "benchmark-1.5", Version: 1, SHA256: sum}
	r.Meta.Profile, r.Results.Profile = ref, ref
	return r
}

// Two runs of one configuration and load whose profiles differ: a ran
// the built-in benchmark-1.5, b a copy named benchmark-1.5 whose formula
// was edited (sha256 updated). By hand (formal J/token, no steady state,
// no SLO):
//
//	run  profile                    J/token
//	a    benchmark-1.5, built-in    0.2437
//	b    benchmark-1.5, edited      0.1219
//
// Pooled as repetitions they would give one point of median 0.1828;
// decided together, b would win at 0.1219 with no note. They are two
// methods: b is flagged profile_edited (differs from built-in
// benchmark-1.5), each is its own point, and each method gets its own
// decision (a under the built-in, b under the edited copy); the decision
// itself chooses nothing and says why.
func TestDecisionPerMethod(t *testing.T) {
	p := builtin(t)
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	builtinSum := hex.EncodeToString(sum[:])
	editedSum := strings.Repeat("ab", 32)
	a := withProfile(frontierRun("a", 4, -1, 0.2437, 20, nil), builtinSum)
	b := withProfile(frontierRun("b", 4, -1, 0.1219, 20, nil), editedSum)
	rep := p.Compare([]Run{a, b})
	doc, text := renderBoth(t, rep)
	if d := doc.Decision; d.Chosen || !strings.Contains(d.Note, "not decided together") {
		t.Errorf("decision: chosen %v %q note %q, want no single choice", d.Chosen, d.Run, d.Note)
	}
	if len(doc.Decisions) != 2 {
		t.Fatalf("%d decisions, want 2 (one per method)", len(doc.Decisions))
	}
	for i, w := range []struct{ run, method string }{
		{"a", "benchmark-1.5 (built-in, sha256 " + builtinSum[:12] + ")"},
		{"b", "benchmark-1.5 (sha256 abababababab; profile edited: differs from built-in benchmark-1.5"},
	} {
		g := doc.Decisions[i]
		if !g.Chosen || g.Run != w.run || g.Runs != 1 || !strings.HasPrefix(g.Method, w.method) {
			t.Errorf("decision %d: chosen %v %q (%d runs) method %q; want %s under %q", i, g.Chosen, g.Run, g.Runs, g.Method, w.run, w.method)
		}
	}
	flagged := map[string]bool{}
	for _, r := range rep.Runs {
		for _, f := range r.Flags {
			if f.Name == FlagProfileEdited && strings.HasPrefix(f.Detail, "differs from built-in benchmark-1.5") {
				flagged[r.RunID] = true
			}
		}
	}
	if !flagged["b"] || flagged["a"] {
		t.Errorf("profile_edited flags: %v, want b only", flagged)
	}
	for _, want := range []string{"Not decided together", "Method: benchmark-1.5 (sha256 abababababab; profile edited", "profile_edited"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// Not pooled anywhere: the statistics keep them apart too (two
	// configurations, one run each).
	for _, g := range rep.Groups {
		for _, c := range g.Configs {
			if c.Runs != 1 {
				t.Errorf("group %s/%s pools %d runs of different methods in one configuration", g.Scenario, g.SizeGroup, c.Runs)
			}
		}
	}
}

// Runs of two methods are never weighed against each other over GPU
// settings, even under a comparison profile whose configuration fields
// leave profile.sha256 out: d (default limit, the built-in) and c200
// (200 W, an edited copy) are one setting each of two methods, so no
// GPU-settings choice is made (with one method, 200 W at 0.12 would be
// chosen over the default's 0.24).
func TestGPUSettingsPerMethod(t *testing.T) {
	p := builtin(t)
	var fields []string
	for _, f := range p.Configuration.Fields {
		if f != "profile.sha256" {
			fields = append(fields, f)
		}
	}
	p.Configuration.Fields = fields
	r := func(id, limit string, st float64, sum string) Run {
		run := withProfile(withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: st, tokens: 100,
			values: map[string]any{"tpot_p50_ms": 17.0}}), nil), sum)
		if limit != "" {
			run.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: limit, Controller: "sim"}
		}
		return run
	}
	one := strings.Repeat("cd", 32)
	if got := p.Compare([]Run{r("d", "", 0.24, one), r("c200", "200", 0.12, one)}).GPUSettings; len(got) != 1 || got[0].RunID != "c200" {
		t.Fatalf("one method: choices %+v", got)
	}
	if got := p.Compare([]Run{r("d", "", 0.24, one), r("c200", "200", 0.12, strings.Repeat("ab", 32))}).GPUSettings; got != nil {
		t.Errorf("two methods: choices %+v, want none", got)
	}
}
