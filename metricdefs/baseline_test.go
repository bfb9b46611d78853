package metricdefs

import (
	"context"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// gateSpec: J/token = formal energy / formal tokens; a check that it is at
// most the baseline's × (1 + tol). On builtinRun: 100 W × 6 s = 600 J over
// 80 tokens = 7.5 J/token.
func gateSpec() Spec {
	return Spec{
		Params: []Param{{Name: "tol", Value: 0.05}, {Name: "baseline", Value: 20.0}},
		Defs: []Def{
			{Name: "tokens", Kind: KindDerived, Expr: `sum(requests, .output_tokens)`},
			{Name: "jpt", Kind: KindMetric, Expr: `energy(stages.formal.start, stages.formal.end, "trapz") / tokens`},
			{Name: "gate", Kind: KindCheck, Severity: SeverityFail, Expr: `jpt <= baseline.jpt * (1 + tol)`},
		},
	}
}

func TestBaselineGate(t *testing.T) {
	prog, errs := Compile(gateSpec())
	if errs != nil {
		t.Fatalf("compile: %v", errs)
	}
	cases := []struct {
		name     string
		baseline *Baseline
		passed   *bool // nil: not applicable
		note     string
	}{
		{"no baseline", nil, nil, "not applicable: no baseline (--baseline DIR)"},
		// 7.5 <= 7.5 × 1.05 = 7.875: passes (the run against itself).
		{"itself", &Baseline{Values: map[string]float64{"jpt": 7.5}}, ptr(true), ""},
		// a baseline 10 % better: 6.75 × 1.05 = 7.0875 < 7.5: fails.
		{"10% better baseline", &Baseline{Values: map[string]float64{"jpt": 6.75}}, ptr(false), ""},
		// 7.2 × 1.05 = 7.56 >= 7.5: within the tolerance.
		{"4% better baseline", &Baseline{Values: map[string]float64{"jpt": 7.2}}, ptr(true), ""},
		{"metric n/a on baseline", &Baseline{Values: map[string]float64{}, Missing: map[string]string{"jpt": "not applicable: no power"}}, nil,
			"not applicable: baseline jpt: not applicable: no power"},
	}
	for _, c := range cases {
		d := builtinRun(t)
		d.Baseline = c.baseline
		res, err := prog.Evaluate(context.Background(), d, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := res.Values["gate"]
		switch {
		case c.passed == nil && (r.Passed != nil || r.Note != c.note):
			t.Errorf("%s: passed %v note %q, want not applicable %q", c.name, r.Passed, r.Note, c.note)
		case c.passed != nil && (r.Passed == nil || *r.Passed != *c.passed):
			t.Errorf("%s: passed %v (note %q), want %v", c.name, r.Passed, r.Note, *c.passed)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A parameter named baseline (older profiles' idle-baseline duration) is
// for steps only; `baseline.NAME` that names nothing is a compile error.
func TestBaselineCompileErrors(t *testing.T) {
	s := gateSpec()
	s.Defs = append(s.Defs, Def{Name: "typo", Kind: KindCheck, Severity: SeverityWarn, Expr: `jpt <= baseline.jtp`})
	_, errs := Compile(s)
	if len(errs) != 1 || errs[0].Def != "typo" || !strings.Contains(errs[0].Msg, `baseline.jtp: no metric or derived value "jtp" in this profile (metrics: jpt)`) {
		t.Errorf("errors = %v", errs)
	}
	// A profile that defines `baseline` itself keeps its own meaning.
	own := Spec{Defs: []Def{{Name: "baseline", Kind: KindDerived, Expr: `2`}, {Name: "m", Kind: KindMetric, Expr: `baseline * 3`}}}
	prog, errs := Compile(own)
	if errs != nil {
		t.Fatal(errs)
	}
	res, err := prog.Evaluate(context.Background(), builtinRun(t), nil)
	if err != nil || res.Values["m"].Value != 6.0 && res.Values["m"].Value != int64(6) {
		t.Errorf("m = %v (%v), want 2 × 3 = 6", res.Values["m"].Value, err)
	}
}

func TestNewBaseline(t *testing.T) {
	b := NewBaseline(&record.Results{RunID: "b", Values: map[string]record.Result{
		"x": {Value: 1.5}, "n": {Value: int64(3)}, "s": {Value: nil, Note: "not applicable: no power"}, "ok": {Value: true},
	}})
	if b.Values["x"] != 1.5 || b.Values["n"] != 3 || b.Missing["s"] != "not applicable: no power" || !strings.Contains(b.Missing["ok"], "not a number") {
		t.Errorf("baseline = %+v", b)
	}
}
