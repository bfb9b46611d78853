package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/golden"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func groupOf(t *testing.T, rep *Report, scenario, group string) GroupStats {
	t.Helper()
	for _, s := range append(append([]GroupStats(nil), rep.Groups...), rep.CrossGroup...) {
		if s.Scenario == scenario && s.SizeGroup == group {
			return s
		}
	}
	t.Fatalf("no group %q/%q in %+v", scenario, group, rep.Groups)
	return GroupStats{}
}

func rk(r *float64) float64 {
	if r == nil {
		return -1
	}
	return *r
}

func TestBuiltinProfile(t *testing.T) {
	p := builtin(t)
	if p.Name != "compare-1.5" || p.Pairs.Tolerance != 0.20 || len(p.Pairs.Engines) != 1 ||
		p.Pairs.Engines[0][0] != "vllm" || p.Pairs.Engines[0][1] != "sglang" {
		t.Errorf("pairs = %+v", p.Pairs)
	}
	if len(p.SizeGroups) != 3 || *p.SizeGroups[0].Max != 50e9 || *p.SizeGroups[1].Below != 200e9 {
		t.Errorf("size groups = %+v", p.SizeGroups)
	}
	if p.Metrics.SteadyJPerToken != "steady_state_j_per_token" || p.Metrics.FullJPerToken != "full_lifecycle_j_per_token" ||
		p.Metrics.OutputTokens != "formal_output_tokens" {
		t.Errorf("metrics = %+v", p.Metrics)
	}
	if p.Asiai.StableCVPct != 5 || p.Asiai.VariableCVPct != 10 {
		t.Errorf("asiai = %+v", p.Asiai)
	}
	// ReadProfile: "" and the name give the built-in; a file is read.
	for _, n := range []string{"", BuiltinName} {
		if q, err := ReadProfile(n); err != nil || q.Name != p.Name {
			t.Errorf("ReadProfile(%q) = %v, %v", n, q, err)
		}
	}
	if _, err := ReadProfile("no-such-compare.yaml"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("ReadProfile(missing) error = %v", err)
	}
}

func TestLoadProfileErrors(t *testing.T) {
	base := string(BuiltinYAML())
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"unknown key", "pair_tolerance_unused: 0", "", nil}, // placeholder, replaced below
		{"unknown key in pairs", "  tolerance: 0.20", "  tolerance: 0.20\n  tolerence: 0.3",
			[]string{`x.yaml:75:3: pairs: unknown key "tolerence" (valid keys: engines, same, tolerance)`}},
		{"wrong type", "  tolerance: 0.20", "  tolerance: [0.2]",
			[]string{"x.yaml:74:14: pairs.tolerance: cannot unmarshal !!seq into float64"}},
		{"tolerance out of range", "  tolerance: 0.20", "  tolerance: 1.5",
			[]string{"x.yaml:74:14: pairs.tolerance: must be a fraction in [0, 1], got 1.5"}},
		{"engine pair of one", "engines: [[vllm, sglang]]", "engines: [[vllm]]",
			[]string{"x.yaml:73:13: pairs.engines[0]: expected two different engine kinds"}},
		{"bounds decrease", `{name: "50B-200B", below: 200e9}`, `{name: "50B-200B", below: 20e9}`,
			[]string{"x.yaml:83:5: size_groups[1]: bounds must increase from group to group (2e+10 after 5e+10)"}},
		{"two kinds in a flag", "{check: release_closed, flag: release_not_closed, removes: [all]}", "{check: release_closed, excluded: true, flag: release_not_closed, removes: [all]}",
			[]string{"x.yaml:48:5: flags[1]: set exactly one of check: NAME, severity: LEVEL, metric: NAME with above: N, excluded: true, incomplete: true"}},
		{"share out of range", "overhead_shares: [0.10, 0.01]", "overhead_shares: [0.10, 1]",
			[]string{"x.yaml:113:27: estimate.overhead_shares[1]: must be a fraction in (0, 1), got 1"}},
		{"missing metric", "  output_tokens: formal_output_tokens\n", "",
			[]string{"metrics.output_tokens: required"}},
		{"bad YAML", "pairs:\n", "pairs: [\n", []string{"x.yaml:", "invalid YAML"}},
		{"unknown removal", "removes: [steady]", "removes: [steddy]",
			[]string{`x.yaml:46:62: flags[0]: removes: unknown value "steddy" (valid: steady, full, startup, release, all, none)`}},
		{"metric without threshold", "{metric: failed_requests, above: 0,", "{metric: failed_requests,",
			[]string{"flags[3]: metric and above go together"}},
	}
	cases[0] = struct {
		name, old, new string
		want           []string
	}{"unknown top-level key", "spec: benchmark-1.5-methodology", "spec: benchmark-1.5-methodology\nthreshold: 3",
		[]string{`x.yaml:16:1: unknown key "threshold" (valid keys: asiai, configuration, description, estimate, flags, metrics, name, not_applicable, pairs, params_label, scenario_labels, size_groups, spec, version)`}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.old) {
				t.Fatalf("the built-in profile has no %q", c.old)
			}
			src := strings.Replace(base, c.old, c.new, 1)
			_, err := Load([]byte(src), "x.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}
}

// Spearman on a small ranking with a tie, and the medians of an even count.
//
// Four configurations (one run each) in scenario "chat":
//
//	steady: a=1, b=2, c=2, d=4   → ranks 1, 2.5, 2.5, 4 (b and c tie)
//	full:   a=2, b=1, c=3, d=4   → ranks 2, 1, 3, 4
//
// Rank deviations from the mean 2.5: dx = (-1.5, 0, 0, 1.5),
// dy = (-0.5, -1.5, 0.5, 1.5); Σdxdy = 0.75 + 2.25 = 3, Σdx² = 4.5,
// Σdy² = 5, so ρ = 3 / √(4.5·5) = 3 / √22.5 = √0.4 = 0.632455532…
// Medians (even count, mean of the two middle values): steady (2+2)/2 = 2,
// full (2+3)/2 = 2.5; ratio 2.5 / 2 = 1.25.
func TestSpearmanWithTieAndMedians(t *testing.T) {
	p := builtin(t)
	runs := []Run{
		mk(spec{id: "a", scenario: "chat", model: "m-a", engine: "vllm", params: "8e9", steady: 1, full: 2, tokens: 1000}),
		mk(spec{id: "b", scenario: "chat", model: "m-b", engine: "vllm", params: "8e9", steady: 2, full: 1, tokens: 1000}),
		mk(spec{id: "c", scenario: "chat", model: "m-c", engine: "vllm", params: "8e9", steady: 2, full: 3, tokens: 1000}),
		mk(spec{id: "d", scenario: "chat", model: "m-d", engine: "vllm", params: "8e9", steady: 4, full: 4, tokens: 1000}),
	}
	st := groupOf(t, p.Compare(runs), "chat", "<=50B")
	if st.Spearman == nil || !near(*st.Spearman, math.Sqrt(0.4)) {
		t.Errorf("spearman = %v, want √0.4 = 0.6324555…", st.Spearman)
	}
	if st.MedianSteady == nil || *st.MedianSteady != 2 || st.MedianFull == nil || *st.MedianFull != 2.5 || st.Ratio == nil || *st.Ratio != 1.25 {
		t.Errorf("medians = %v, %v, ratio %v; want 2, 2.5, 1.25", st.MedianSteady, st.MedianFull, st.Ratio)
	}
	ranks := map[string][2]float64{}
	for _, c := range st.Configs {
		ranks[c.Model] = [2]float64{rk(c.SteadyRank), rk(c.FullRank)}
	}
	want := map[string][2]float64{"m-a": {1, 2}, "m-b": {2.5, 1}, "m-c": {2.5, 3}, "m-d": {4, 4}}
	for m, w := range want {
		if ranks[m] != w {
			t.Errorf("ranks of %s = %v, want %v", m, ranks[m], w)
		}
	}
}

// Medians per scenario on an even count with distinct values, and a
// configuration run twice counting once with its median.
//
// Scenario "code": steady 0.1, 0.3, 0.2, 0.5 → sorted 0.1 0.2 0.3 0.5 →
// median (0.2 + 0.3)/2 = 0.25; full 0.4, 0.9, 0.5, 0.6 → 0.4 0.5 0.6 0.9 →
// (0.5 + 0.6)/2 = 0.55; ratio 0.55 / 0.25 = 2.2.
// Model m-x on vllm ran twice (steady 0.1 and 0.1, full 0.3 and 0.5): one
// configuration with steady 0.1, full (0.3 + 0.5)/2 = 0.4.
func TestMediansPerScenarioEvenCount(t *testing.T) {
	p := builtin(t)
	runs := []Run{
		mk(spec{id: "x1", scenario: "code", model: "m-x", engine: "vllm", steady: 0.1, full: 0.3, tokens: 10}),
		mk(spec{id: "x2", scenario: "code", model: "m-x", engine: "vllm", steady: 0.1, full: 0.5, tokens: 10}),
		mk(spec{id: "y", scenario: "code", model: "m-y", engine: "vllm", steady: 0.3, full: 0.9, tokens: 10}),
		mk(spec{id: "z", scenario: "code", model: "m-z", engine: "sglang", steady: 0.2, full: 0.5, tokens: 10}),
		mk(spec{id: "w", scenario: "code", model: "m-w", engine: "sglang", steady: 0.5, full: 0.6, tokens: 10}),
		// another scenario does not mix in
		mk(spec{id: "o", scenario: "other", model: "m-x", engine: "vllm", steady: 9, full: 9, tokens: 10}),
	}
	st := groupOf(t, p.Compare(runs), "code", UnknownGroup)
	if st.Runs != 5 || st.Included != 5 || len(st.Configs) != 4 {
		t.Fatalf("runs %d, included %d, configs %d; want 5, 5, 4", st.Runs, st.Included, len(st.Configs))
	}
	if !near(*st.MedianSteady, 0.25) || !near(*st.MedianFull, 0.55) || !near(*st.Ratio, 2.2) {
		t.Errorf("median steady %v, full %v, ratio %v; want 0.25, 0.55, 2.2", *st.MedianSteady, *st.MedianFull, *st.Ratio)
	}
	for _, c := range st.Configs {
		if c.Model == "m-x" && (c.Runs != 2 || !near(c.Steady.Median, 0.1) || !near(c.Full.Median, 0.4)) {
			t.Errorf("m-x config = %+v, want 2 runs, steady 0.1, full 0.4", c)
		}
	}
}

// The 20 % rule on total formal output tokens: |T1 - T2| / max(T1, T2).
// 1000 vs 801: 199/1000 = 19.9 % → comparable; 1000 vs 799: 20.1 % → not;
// 1000 vs 800: exactly 20 % → comparable (the bound is inclusive).
func TestPairRule(t *testing.T) {
	p := builtin(t)
	for _, c := range []struct {
		t2         float64
		comparable bool
		reason     string
	}{
		{801, true, ""},
		{800, true, ""},
		{799, false, "output tokens differ by 20.1 % > 20.0 %"},
	} {
		runs := []Run{
			mk(spec{id: "v", scenario: "chat", model: "m", engine: "vllm", steady: 0.1, full: 0.2, tokens: 1000}),
			mk(spec{id: "s", scenario: "chat", model: "m", engine: "sglang", steady: 0.1, full: 0.2, tokens: c.t2}),
			// other model or scenario: no pair
			mk(spec{id: "s2", scenario: "chat", model: "other", engine: "sglang", steady: 0.1, full: 0.2, tokens: 1000}),
			mk(spec{id: "s3", scenario: "code", model: "m", engine: "sglang", steady: 0.1, full: 0.2, tokens: 1000}),
		}
		rep := p.Compare(runs)
		if len(rep.Pairs) != 1 {
			t.Fatalf("T2=%v: %d pairs, want 1: %+v", c.t2, len(rep.Pairs), rep.Pairs)
		}
		pr := rep.Pairs[0]
		if pr.A.RunID != "v" || pr.B.RunID != "s" || pr.Comparable != c.comparable || pr.Reason != c.reason {
			t.Errorf("T2=%v: pair = %+v, want comparable %v reason %q", c.t2, pr, c.comparable, c.reason)
		}
		if want := (1000 - c.t2) / 1000; pr.TokenDiff == nil || !near(*pr.TokenDiff, want) {
			t.Errorf("T2=%v: token diff %v, want %v", c.t2, pr.TokenDiff, want)
		}
	}
	if d := TokenDiff(801, 1000); !near(d, 0.199) {
		t.Errorf("TokenDiff(801, 1000) = %v, want 0.199 (order does not matter)", d)
	}
}

// Each flag removes what the comparison profile says, no more. Scenario
// chat, all 8B (one size group), one run per model:
//
//	ok1     m1  steady 1   full 2    startup 100  release 10
//	ok2     m2  steady 3   full 4    startup 300  release 30
//	drift   m3  not steady full 6    startup 500  release 50  → loses steady only
//	nofull  m6  steady 2   full n/a  startup 200  release 20  → missing_value: loses full
//	open    m4  release not closed (severity exclude)         → out entirely
//	crash   m5  status failed                                 → out entirely
//	failreq m7  3 failed formal requests (> 0)                → out entirely
//	failchk m8  a check of severity fail failed               → out entirely
//
// In the statistics: steady {1, 3, 2} → median 2; full {2, 4, 6} → median 4;
// startup {100, 300, 500, 200} → 100 200 300 500 → (200 + 300)/2 = 250;
// release {10, 30, 50, 20} → (20 + 30)/2 = 25. The ratio full / steady is
// over the configurations with both values, m1 (1, 2) and m2 (3, 4):
// median full (2 + 4)/2 = 3 over median steady (1 + 3)/2 = 2 → 1.5 (not
// the 4/2 = 2 of the medians over different run sets).
// Steady ranks m1 1, m6 2, m2 3 (m3 none); full ranks m1 1, m2 2, m3 3 (m6
// none). Spearman over the configurations with both bases, m1 (1, 2) and
// m2 (3, 4): two points in the same order → ρ = 1.
func TestFlagsRemoveWhatTheProfileSays(t *testing.T) {
	p := builtin(t)
	c := func(id, model string, st, full, startup, release float64) spec {
		return spec{id: id, scenario: "chat", model: model, engine: "vllm", params: "8e9", steady: st, full: full, tokens: 100, startup: startup, release: release}
	}
	drift := c("drift", "m3", -1, 6, 500, 50)
	drift.notSteady = true
	open := c("open", "m4", 50, 100, 9000, 9000)
	open.notClosed = true
	crash := c("crash", "m5", 50, 100, 9000, 9000)
	crash.incomplete = true
	failreq := c("failreq", "m7", 50, 100, 9000, 9000)
	failreq.failed = 3
	failchk := c("failchk", "m8", 50, 100, 9000, 9000)
	failchk.failCheck = true
	runs := []Run{mk(c("ok1", "m1", 1, 2, 100, 10)), mk(c("ok2", "m2", 3, 4, 300, 30)), mk(drift), mk(c("nofull", "m6", 2, -1, 200, 20)),
		mk(open), mk(crash), mk(failreq), mk(failchk)}
	rep := p.Compare(runs)
	type want struct {
		flags, removed string
		included       bool
	}
	wants := map[string]want{
		"ok1": {"-", "", true}, "ok2": {"-", "", true}, "drift": {"not_steady", "steady", true}, "nofull": {"missing_value", "full", true},
		"open": {"release_not_closed", "all", false}, "crash": {"incomplete", "all", false},
		"failreq": {"failed_requests", "all", false}, "failchk": {"check_failed", "all", false},
	}
	for _, r := range rep.Runs {
		w := wants[r.RunID]
		if got := flagNames(r.Flags); got != w.flags || strings.Join(r.Removed, ",") != w.removed || r.Included != w.included {
			t.Errorf("%s: flags %q removed %v included %v; want %q, %q, %v", r.RunID, got, r.Removed, r.Included, w.flags, w.removed, w.included)
		}
	}
	details := map[string]string{}
	for _, f := range rep.Flagged {
		details[f.RunID] = f.Flags[0].Detail
	}
	if len(rep.Flagged) != 6 || !strings.Contains(details["open"], "maximum wait") || details["failreq"] != "failed_requests = 3 > 0" ||
		!strings.HasPrefix(details["failchk"], "check tokens_match: output tokens do not match") ||
		details["crash"] != "status failed: engine exited during the formal stage" {
		t.Errorf("flagged = %+v", rep.Flagged)
	}
	st := groupOf(t, rep, "chat", "<=50B")
	if st.Runs != 8 || st.Included != 4 || st.Flagged != 6 || *st.MedianSteady != 2 || *st.MedianFull != 4 ||
		*st.MedianStartup != 250 || *st.MedianRelease != 25 || *st.Ratio != 1.5 || st.RatioConfigs != 2 || st.Spearman == nil || *st.Spearman != 1 {
		t.Errorf("group = %+v", st)
	}
	ranks := map[string][2]float64{}
	for _, c := range st.Configs {
		ranks[c.Model] = [2]float64{rk(c.SteadyRank), rk(c.FullRank)}
	}
	for m, w := range map[string][2]float64{"m1": {1, 1}, "m6": {2, -1}, "m2": {3, 2}, "m3": {-1, 3}} {
		if ranks[m] != w {
			t.Errorf("ranks of %s = %v, want %v (-1: none)", m, ranks[m], w)
		}
	}
	if len(st.Configs) != 4 {
		t.Errorf("%d configurations, want 4", len(st.Configs))
	}

	// The failed-request threshold is a parameter: above 5, 3 failures pass
	// and failreq (steady 50, full 100) joins: steady {1, 3, 2, 50} →
	// median (2 + 3)/2 = 2.5.
	q := *p
	q.Flags = slices.Clone(p.Flags)
	for i := range q.Flags {
		if q.Flags[i].Metric == "failed_requests" {
			five := 5.0
			q.Flags[i].Above = &five
		}
	}
	if st := groupOf(t, q.Compare(runs), "chat", "<=50B"); st.Included != 5 || *st.MedianSteady != 2.5 {
		t.Errorf("above 5: included %d, median steady %v; want 5, 2.5", st.Included, *st.MedianSteady)
	}
	// What a flag removes is data: not_steady removing all leaves drift out,
	// full {2, 4} → median 3.
	q.Flags = slices.Clone(p.Flags)
	q.Flags[0].Removes = []string{ValueAll}
	if st := groupOf(t, q.Compare(runs), "chat", "<=50B"); st.Included != 3 || *st.MedianFull != 3 {
		t.Errorf("not_steady removes all: included %d, median full %v; want 3, 3", st.Included, *st.MedianFull)
	}
}

// A pair is compared only on equal configurations: the same request set,
// max_tokens policy, tensor parallelism, context length and precision.
func TestPairSameConfiguration(t *testing.T) {
	p := builtin(t)
	base := func(id, engine string) Run {
		r := mk(spec{id: id, scenario: "chat", model: "m", engine: engine, steady: 0.1, full: 0.2, tokens: 1000})
		r.Meta.RequestSet.SHA256 = "abc"
		r.Meta.Parameters = map[string]any{"max_tokens": 0, "ignore_eos": false}
		r.Meta.Engine.TensorParallel, r.Meta.Engine.ContextLength, r.Meta.Engine.Precision = 1, 8192, "bf16"
		return r
	}
	for _, c := range []struct {
		name   string
		change func(*Run)
		field  string
		a, b   string
	}{
		{"equal", func(*Run) {}, "", "", ""},
		{"request set", func(r *Run) { r.Meta.RequestSet.SHA256 = "def" }, "request_set.sha256", `"abc"`, `"def"`},
		{"max_tokens", func(r *Run) { r.Meta.Parameters["max_tokens"] = 512 }, "parameters.max_tokens", "0", "512"},
		{"tensor parallel", func(r *Run) { r.Meta.Engine.TensorParallel = 2 }, "engine.tensor_parallel", "1", "2"},
		{"context length", func(r *Run) { r.Meta.Engine.ContextLength = 32768 }, "engine.context_length", "8192", "32768"},
		{"precision", func(r *Run) { r.Meta.Engine.Precision = "fp8" }, "engine.precision", `"bf16"`, `"fp8"`},
	} {
		s := base("s", "sglang")
		c.change(&s)
		rep := p.Compare([]Run{base("v", "vllm"), s})
		if len(rep.Pairs) != 1 {
			t.Fatalf("%s: %d pairs", c.name, len(rep.Pairs))
		}
		pr := rep.Pairs[0]
		if c.field == "" {
			if !pr.Comparable || len(pr.Differs) != 0 {
				t.Errorf("%s: pair %+v, want comparable", c.name, pr)
			}
			continue
		}
		if pr.Comparable || len(pr.Differs) != 1 || pr.Differs[0] != (FieldDiff{c.field, c.a, c.b}) || !strings.Contains(pr.Reason, c.field+" differs") {
			t.Errorf("%s: pair comparable %v, differs %+v, reason %q; want %s %s vs %s", c.name, pr.Comparable, pr.Differs, pr.Reason, c.field, c.a, c.b)
		}
	}
}

// Ranks, medians and Spearman are within a size group; the cross-group view
// is apart. chat: 8B models a (steady 1, full 4) and b (2, 3); 70B models c
// (10, 20) and d (30, 10).
//
//	<=50B: medians steady 1.5, full 3.5; ranks a 1/2, b 2/1 → ρ = -1
//	50B-200B: medians 20, 15; ranks c 1/2, d 2/1 → ρ = -1
//	cross-group: steady 1 2 10 30 → median 6; full 3 4 10 20 → 7;
//	ranks steady a1 b2 c3 d4, full a2 b1 c4 d3: d = -1 1 -1 1, Σd² = 4,
//	ρ = 1 - 6·4/(4·15) = 0.6
func TestWithinSizeGroups(t *testing.T) {
	p := builtin(t)
	r := func(id, params string, st, full float64) Run {
		return mk(spec{id: id, scenario: "chat", model: id, engine: "vllm", params: params, steady: st, full: full, tokens: 1})
	}
	rep := p.Compare([]Run{r("a", "8B", 1, 4), r("b", "8B", 2, 3), r("c", "70B", 10, 20), r("d", "70B", 30, 10)})
	for _, w := range []struct {
		group             string
		steady, full, rho float64
	}{{"<=50B", 1.5, 3.5, -1}, {"50B-200B", 20, 15, -1}, {CrossGroup, 6, 7, 0.6}} {
		st := groupOf(t, rep, "chat", w.group)
		if !near(*st.MedianSteady, w.steady) || !near(*st.MedianFull, w.full) || st.Spearman == nil || !near(*st.Spearman, w.rho) {
			t.Errorf("%s: medians %v %v rho %v; want %v %v %v", w.group, *st.MedianSteady, *st.MedianFull, st.Spearman, w.steady, w.full, w.rho)
		}
	}
	if len(rep.Groups) != 2 || len(rep.CrossGroup) != 1 {
		t.Errorf("%d groups, %d cross-group rows; want 2, 1", len(rep.Groups), len(rep.CrossGroup))
	}
}

// Repetitions: m ran three times, steady 0.2, 0.3, 0.25 → n 3, median 0.25,
// min 0.2, max 0.3, spread (0.3 - 0.2)/0.25 = 40 %; full 1, 1, 1 → spread 0.
func TestRepetitions(t *testing.T) {
	p := builtin(t)
	var runs []Run
	for i, st := range []float64{0.2, 0.3, 0.25} {
		runs = append(runs, mk(spec{id: fmt.Sprint("m", i), scenario: "chat", model: "m", engine: "vllm", params: "8B", steady: st, full: 1, tokens: 1}))
	}
	c := groupOf(t, p.Compare(runs), "chat", "<=50B").Configs[0]
	if c.Runs != 3 || c.Steady.N != 3 || !near(c.Steady.Median, 0.25) || c.Steady.Min != 0.2 || c.Steady.Max != 0.3 || !near(*c.Steady.SpreadPct, 40) ||
		*c.Full.SpreadPct != 0 {
		t.Errorf("config = %+v steady %+v full %+v", c, c.Steady, c.Full)
	}
	if got := fmtSpread(c.Steady); got != "n=3: 0.2500 (0.2000–0.3000, 40.0 %)" {
		t.Errorf("fmtSpread = %q", got)
	}
}

func TestSizeGroupsAndParams(t *testing.T) {
	p := builtin(t)
	for _, c := range []struct {
		params float64
		group  string
	}{{8e9, "<=50B"}, {50e9, "<=50B"}, {50.1e9, "50B-200B"}, {199.9e9, "50B-200B"}, {200e9, ">=200B"}, {671e9, ">=200B"}} {
		if g := p.SizeGroupOf(c.params); g != c.group {
			t.Errorf("SizeGroupOf(%g) = %q, want %q", c.params, g, c.group)
		}
	}
	for in, want := range map[string]float64{"8e9": 8e9, "7.6B": 7.6e9, "70b": 70e9, "1.5T": 1.5e12, "560M": 560e6, " 405 B ": 405e9, "8000000000": 8e9} {
		if v, err := ParseParams(in); err != nil || !near(v, want) {
			t.Errorf("ParseParams(%q) = %v, %v; want %v", in, v, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "-5B", "0", "NaN", "1e999"} {
		if _, err := ParseParams(bad); err == nil {
			t.Errorf("ParseParams(%q): no error", bad)
		}
	}
	// From run metadata: the label, else engine.extra; a bad label is a note.
	rep := p.Compare([]Run{
		mk(spec{id: "a", scenario: "s", model: "big", engine: "vllm", params: "405B", steady: 1, full: 1, tokens: 1}),
		mk(spec{id: "b", scenario: "s", model: "bad", engine: "vllm", params: "lots", steady: 1, full: 1, tokens: 1}),
	})
	for _, r := range rep.Runs {
		switch r.RunID {
		case "a":
			if r.SizeGroup != ">=200B" || *r.Params != 405e9 {
				t.Errorf("a: %s %v", r.SizeGroup, r.Params)
			}
		case "b":
			if r.SizeGroup != UnknownGroup || !strings.Contains(r.ParamsNote, `model_params "lots"`) {
				t.Errorf("b: %s %q", r.SizeGroup, r.ParamsNote)
			}
		}
	}
	r := mk(spec{id: "c", scenario: "s", model: "x", engine: "vllm", steady: 1, full: 1, tokens: 1})
	r.Meta.Engine.Extra = map[string]any{"model_params": 1.2e11}
	if row := p.runRow(r, nil); row.SizeGroup != "50B-200B" {
		t.Errorf("params from engine.extra: group %q", row.SizeGroup)
	}
	// scenario: label scenario, else task, else the request set
	r.Meta.Labels = map[string]string{"task": "summarize"}
	if s := p.scenarioOf(r.Meta); s != "summarize" {
		t.Errorf("scenario from task = %q", s)
	}
	r.Meta.Labels = nil
	r.Meta.RequestSet.Source = "builtin:chat"
	if s := p.scenarioOf(r.Meta); s != "builtin:chat" {
		t.Errorf("scenario from request set = %q", s)
	}
}

// asiai runs per engine. Engine "ollama" ran twice:
//
//	run 1: median 40, mean 41, std 3, power 20 W
//	run 2: median 44, mean 43, std 4, power 22 W
//
// → median tok/s = median(40, 44) = 42; mean = (41 + 43)/2 = 42;
// pooled std = √((9 + 16)/2) = √12.5 = 3.5355…; power = 21 W;
// tok/s/W = 42 / 21 = 2; CV = 3.5355/42 × 100 = 8.418 % → "variable".
// Engine "llamacpp" ran once: its own values, including its stability.
func TestAsiaiPerEngine(t *testing.T) {
	p := builtin(t)
	as := func(id, engine string, med, mean, std, w, perW float64, stab string) Run {
		r := mk(spec{id: id, model: "llama3", engine: engine, profile: "asiai", values: map[string]any{
			"tok_per_sec": med, "tok_per_sec_mean": mean, "std_dev_tok_s": std, "power_watts": w, "tok_per_sec_per_watt": perW}})
		r.Results.Values["stability"] = metric(stab, "")
		return r
	}
	rep := p.Compare([]Run{
		as("o1", "ollama", 40, 41, 3, 20, 2, "stable"),
		as("o2", "ollama", 44, 43, 4, 22, 2, "stable"),
		as("l1", "llamacpp", 30, 31, 1, 10, 3, "stable"),
	})
	if len(rep.Runs) != 0 || len(rep.Asiai) != 2 {
		t.Fatalf("runs %d, asiai rows %d; want 0 and 2", len(rep.Runs), len(rep.Asiai))
	}
	l, o := rep.Asiai[0], rep.Asiai[1] // sorted by engine
	if o.Engine != "ollama" || o.Runs != 2 || *o.TokS != 42 || *o.TokSMean != 42 || !near(*o.TokSStd, math.Sqrt(12.5)) ||
		*o.PowerW != 21 || *o.TokSPerW != 2 || o.Stability != "variable" || !near(*o.CVPct, math.Sqrt(12.5)/42*100) {
		t.Errorf("ollama row = %+v", o)
	}
	if l.Engine != "llamacpp" || l.Runs != 1 || *l.TokS != 30 || *l.TokSPerW != 3 || l.Stability != "stable" {
		t.Errorf("llamacpp row = %+v", l)
	}
	if s := p.stabilityOf(4.99); s != "stable" {
		t.Errorf("4.99 %% → %s", s)
	}
	if s := p.stabilityOf(5); s != "variable" {
		t.Errorf("5 %% → %s", s)
	}
	if s := p.stabilityOf(10); s != "unstable" {
		t.Errorf("10 %% → %s", s)
	}
}

// sampleReport has one of everything the renderer shows. The golden
// numbers, by hand (within each size group; ds-vllm is not steady and loses
// only its steady-state value):
//
//   - chat <=50B: steady 0.1234, 0.1111 → median 0.11725; full 0.2345, 0.25
//     → 0.24225; ratio 2.066; ranks steady sglang 1 vllm 2, full vllm 1
//     sglang 2 → ρ = -1.
//   - chat 50B-200B: steady 0.4321, 0.4 → 0.41605; full 0.5432, 0.6 →
//     0.5716; ratio 1.374; ρ = -1 likewise.
//   - chat >=200B: ds-vllm's full 0.9 only: median full 0.9, no ratio.
//   - cross-group chat: steady 0.1111 0.1234 0.4 0.4321 → (0.1234 + 0.4)/2
//     = 0.26170; full 0.2345 0.25 0.5432 0.6 0.9 → 0.5432; the ratio is
//     over the four configurations with both: full 0.2345 0.25 0.5432 0.6
//     → (0.25 + 0.5432)/2 = 0.3966, / 0.26170 = 1.515;
//     Spearman over the four with both: steady ranks 2, 1, 4, 3, full ranks
//     1, 2, 3, 4; Σd² = 4, ρ = 1 - 6·4/(4·15) = 0.6.
//   - pairs: Qwen 100000 vs 90000 → 10.0 % (comparable); Llama 120000 vs
//     80000 → 33.3 % (not comparable).
//   - code: one configuration: medians 0.2 and 0.3, ratio 1.5, no Spearman.
//   - asiai: one ollama run, CV = 0.8/41.2 × 100 = 1.9 %.
func sampleReport(t *testing.T) *Report {
	p := builtin(t)
	as := mk(spec{id: "asiai-ollama", model: "llama3:8b", engine: "ollama", profile: "asiai", values: map[string]any{
		"tok_per_sec": 41.5, "tok_per_sec_mean": 41.2, "std_dev_tok_s": 0.8, "power_watts": 18.4, "tok_per_sec_per_watt": 2.2554}})
	as.Results.Values["stability"] = metric("stable", "")
	return p.Compare([]Run{
		mk(spec{id: "qwen-vllm", scenario: "chat", model: "Qwen/Qwen3-8B", engine: "vllm", params: "8e9", steady: 0.1234, full: 0.2345, tokens: 100000}),
		mk(spec{id: "qwen-sglang", scenario: "chat", model: "Qwen/Qwen3-8B", engine: "sglang", params: "8e9", steady: 0.1111, full: 0.2500, tokens: 90000}),
		mk(spec{id: "llama-vllm", scenario: "chat", model: "meta/Llama-3.3-70B", engine: "vllm", params: "70B", steady: 0.4321, full: 0.5432, tokens: 120000}),
		mk(spec{id: "llama-sglang", scenario: "chat", model: "meta/Llama-3.3-70B", engine: "sglang", params: "70B", steady: 0.4, full: 0.6, tokens: 80000}),
		mk(spec{id: "ds-vllm", scenario: "chat", model: "deepseek/V3", engine: "vllm", params: "671B", steady: -1, full: 0.9, tokens: 50000, notSteady: true}),
		mk(spec{id: "qwen-code", scenario: "code", model: "Qwen/Qwen3-8B", engine: "vllm", params: "8e9", steady: 0.2, full: 0.3, tokens: 40000}),
		as,
	})
}

func TestRenderGolden(t *testing.T) {
	rep := sampleReport(t)
	for _, f := range []struct{ format, file string }{
		{doc.FormatTable, "compare.table.golden"},
		{doc.FormatMarkdown, "compare.markdown.golden"},
		{doc.FormatCSV, "compare.csv.golden"},
		{doc.FormatJSON, "compare.json.golden"},
	} {
		var buf bytes.Buffer
		if err := Render(&buf, rep, f.format); err != nil {
			t.Fatalf("%s: %v", f.format, err)
		}
		golden.Check(t, f.file, buf.Bytes())
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, "yaml"); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("unknown format: %v", err)
	}
	// The JSON is one valid document.
	buf.Reset()
	_ = Render(&buf, rep, doc.FormatJSON)
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Runs) != 6 || len(back.Pairs) != 2 {
		t.Errorf("json: %v, %d runs, %d pairs", err, len(back.Runs), len(back.Pairs))
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	mkrun := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs := filepath.Join(root, "runs")
	mkrun(filepath.Join(runs, "b"))
	mkrun(filepath.Join(runs, "a"))
	mkrun(filepath.Join(runs, ".hidden"))
	if err := os.MkdirAll(filepath.Join(runs, "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Discover([]string{runs, filepath.Join(runs, "a")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(runs, "a"), filepath.Join(runs, "b")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Discover = %v, want %v (in name order, each once)", got, want)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(root, "missing"), "no such run directory"},
		{filepath.Join(runs, "not-a-run"), "neither a run directory"},
		{filepath.Join(runs, "a", "run.json"), "not a directory"},
	} {
		if _, err := Discover([]string{c.path}); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Discover(%s) error = %v, want %q naming the path", c.path, err, c.want)
		}
	}
}
