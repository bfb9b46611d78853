package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/golden"
	"github.com/joulebench/joulebench/report"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func scenarioByName(t *testing.T, rep *Report, name string) ScenarioStats {
	t.Helper()
	for _, s := range rep.Scenarios {
		if s.Scenario == name {
			return s
		}
	}
	t.Fatalf("no scenario %q in %+v", name, rep.Scenarios)
	return ScenarioStats{}
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
			[]string{`x.yaml:43:3: pairs: unknown key "tolerence" (valid keys: engines, tolerance)`}},
		{"wrong type", "  tolerance: 0.20", "  tolerance: [0.2]",
			[]string{"x.yaml:42:14: pairs.tolerance: cannot unmarshal !!seq into float64"}},
		{"tolerance out of range", "  tolerance: 0.20", "  tolerance: 1.5",
			[]string{"x.yaml:42:14: pairs.tolerance: must be a fraction in [0, 1], got 1.5"}},
		{"engine pair of one", "engines: [[vllm, sglang]]", "engines: [[vllm]]",
			[]string{"x.yaml:41:13: pairs.engines[0]: expected two different engine kinds"}},
		{"bounds decrease", `{name: "50B-200B", below: 200e9}`, `{name: "50B-200B", below: 20e9}`,
			[]string{"x.yaml:48:5: size_groups[1]: bounds must increase from group to group (2e+10 after 5e+10)"}},
		{"two kinds in a flag", "{check: release_closed, flag: release_not_closed}", "{check: release_closed, excluded: true, flag: release_not_closed}",
			[]string{"x.yaml:34:5: flags[1]: set exactly one of check: NAME, excluded: true, incomplete: true"}},
		{"share out of range", "overhead_shares: [0.10, 0.01]", "overhead_shares: [0.10, 1]",
			[]string{"x.yaml:77:27: estimate.overhead_shares[1]: must be a fraction in (0, 1), got 1"}},
		{"missing metric", "  output_tokens: formal_output_tokens\n", "",
			[]string{"metrics.output_tokens: required"}},
		{"bad YAML", "pairs:\n", "pairs: [\n", []string{"x.yaml:", "invalid YAML"}},
	}
	cases[0] = struct {
		name, old, new string
		want           []string
	}{"unknown top-level key", "spec: benchmark-1.5-methodology", "spec: benchmark-1.5-methodology\nthreshold: 3",
		[]string{`x.yaml:16:1: unknown key "threshold" (valid keys: asiai, description, estimate, flags, metrics, name, pairs, params_label, scenario_labels, size_groups, spec, version)`}}
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
	st := scenarioByName(t, p.Compare(runs), "chat")
	if st.Spearman == nil || !near(*st.Spearman, math.Sqrt(0.4)) {
		t.Errorf("spearman = %v, want √0.4 = 0.6324555…", st.Spearman)
	}
	if st.MedianSteady == nil || *st.MedianSteady != 2 || st.MedianFull == nil || *st.MedianFull != 2.5 || st.Ratio == nil || *st.Ratio != 1.25 {
		t.Errorf("medians = %v, %v, ratio %v; want 2, 2.5, 1.25", st.MedianSteady, st.MedianFull, st.Ratio)
	}
	ranks := map[string][2]float64{}
	for _, c := range st.Configs {
		ranks[c.Model] = [2]float64{c.SteadyRank, c.FullRank}
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
	st := scenarioByName(t, p.Compare(runs), "code")
	if st.Runs != 5 || st.Included != 5 || len(st.Configs) != 4 {
		t.Fatalf("runs %d, included %d, configs %d; want 5, 5, 4", st.Runs, st.Included, len(st.Configs))
	}
	if !near(*st.MedianSteady, 0.25) || !near(*st.MedianFull, 0.55) || !near(*st.Ratio, 2.2) {
		t.Errorf("median steady %v, full %v, ratio %v; want 0.25, 0.55, 2.2", *st.MedianSteady, *st.MedianFull, *st.Ratio)
	}
	for _, c := range st.Configs {
		if c.Model == "m-x" && (c.Runs != 2 || !near(c.Steady, 0.1) || !near(c.Full, 0.4)) {
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

// Flagged runs are shown with their flag and left out of the statistics.
func TestFlaggedRunsLeftOut(t *testing.T) {
	p := builtin(t)
	runs := []Run{
		mk(spec{id: "ok1", scenario: "chat", model: "m1", engine: "vllm", steady: 1, full: 2, tokens: 100}),
		mk(spec{id: "ok2", scenario: "chat", model: "m2", engine: "vllm", steady: 3, full: 4, tokens: 100}),
		mk(spec{id: "drift", scenario: "chat", model: "m3", engine: "vllm", steady: -1, full: 100, tokens: 100, notSteady: true}),
		mk(spec{id: "open", scenario: "chat", model: "m4", engine: "vllm", steady: 50, full: 100, tokens: 100, notClosed: true}),
		mk(spec{id: "crash", scenario: "chat", model: "m5", engine: "vllm", steady: 50, full: 100, tokens: 100, incomplete: true}),
		mk(spec{id: "nofull", scenario: "chat", model: "m6", engine: "vllm", steady: 50, full: -1, tokens: 100}),
	}
	rep := p.Compare(runs)
	flags := map[string]string{}
	for _, r := range rep.Runs {
		flags[r.RunID] = flagNames(r.Flags)
		if r.Included != (len(r.Flags) == 0) {
			t.Errorf("%s: included %v with flags %v", r.RunID, r.Included, r.Flags)
		}
	}
	want := map[string]string{"ok1": "-", "ok2": "-", "drift": "not_steady", "open": "release_not_closed",
		"crash": "incomplete", "nofull": "missing_value"}
	for id, w := range want {
		if flags[id] != w {
			t.Errorf("%s flags = %q, want %q", id, flags[id], w)
		}
	}
	if len(rep.Flagged) != 4 {
		t.Errorf("flagged list has %d runs, want 4: %+v", len(rep.Flagged), rep.Flagged)
	}
	st := scenarioByName(t, rep, "chat")
	// only ok1 and ok2: medians (1+3)/2 = 2 and (2+4)/2 = 3
	if st.Included != 2 || st.Flagged != 4 || *st.MedianSteady != 2 || *st.MedianFull != 3 {
		t.Errorf("stats = included %d flagged %d medians %v %v; want 2, 4, 2, 3", st.Included, st.Flagged, *st.MedianSteady, *st.MedianFull)
	}
	// the release flag carries its reason; excluded is not repeated
	for _, f := range rep.Flagged {
		if f.RunID == "open" && (len(f.Flags) != 1 || !strings.Contains(f.Flags[0].Detail, "maximum wait")) {
			t.Errorf("open: flags %+v", f.Flags)
		}
		if f.RunID == "crash" && f.Flags[0].Detail != "status failed: engine exited during the formal stage" {
			t.Errorf("crash: flags %+v", f.Flags)
		}
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
// numbers, by hand:
//
//   - chat, included (ds-vllm is not steady, left out): steady 0.1234,
//     0.1111, 0.4321, 0.4 → sorted 0.1111 0.1234 0.4 0.4321 → median
//     (0.1234 + 0.4)/2 = 0.2617; full 0.2345, 0.25, 0.5432, 0.6 → median
//     (0.25 + 0.5432)/2 = 0.3966; ratio 0.3966/0.2617 = 1.515.
//   - Spearman, chat: steady ranks qwen-vllm 2, qwen-sglang 1, llama-vllm 4,
//     llama-sglang 3; full ranks 1, 2, 3, 4; d = 1, -1, 1, -1, Σd² = 4,
//     ρ = 1 - 6·4/(4·(16 - 1)) = 0.6 (no ties).
//   - pairs: Qwen 100000 vs 90000 → 10000/100000 = 10.0 % (comparable);
//     Llama 120000 vs 80000 → 40000/120000 = 33.3 % (not comparable).
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
		{report.FormatTable, "compare.table.golden"},
		{report.FormatMarkdown, "compare.markdown.golden"},
		{report.FormatCSV, "compare.csv.golden"},
		{report.FormatJSON, "compare.json.golden"},
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
	_ = Render(&buf, rep, report.FormatJSON)
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
