package metricdefs

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// Definitions evaluated concurrently give what they give one after the
// other: values, notes, errors (in the same order) and exclusion.
func TestConcurrentEvaluationSameAsSequential(t *testing.T) {
	defs := itlDefs(
		// A chain: each reads the one before, so each must wait for it.
		Def{Name: "c0", Kind: KindDerived, Expr: `len(formal)`},
		Def{Name: "c1", Kind: KindDerived, Expr: `c0 + 1`},
		Def{Name: "c2", Kind: KindDerived, Expr: `c1 * 2`},
		Def{Name: "c3", Kind: KindMetric, Expr: `c2 - c0`},
		// Failures and not-applicable values propagate to dependents.
		Def{Name: "boom", Kind: KindDerived, Expr: `formal[0].output_tokens / 0`},
		Def{Name: "after_boom", Kind: KindMetric, Expr: `boom + 1`},
		Def{Name: "never", Kind: KindDerived, Expr: `1.0`, When: `c0 < 0`, NA: "never"},
		Def{Name: "after_never", Kind: KindMetric, Expr: `never * 2`},
		Def{Name: "excl1", Kind: KindCheck, Expr: `c3 < 0`, Severity: SeverityExclude, Message: "first", Detail: `string(c3)`},
		Def{Name: "excl2", Kind: KindCheck, Expr: `c1 < 0`, Severity: SeverityExclude, Message: "second"},
	)
	for i := range 20 {
		defs = append(defs, Def{Name: fmt.Sprintf("w%d", i), Kind: KindMetric, Expr: fmt.Sprintf(`percentile(itl_s, %d) + c2`, 5*i)})
	}
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !prog.concurrent {
		t.Fatal("program is not concurrent")
	}
	d := itlRun(t, 300, false)
	run := func(concurrent bool) (string, string) {
		prog.concurrent = concurrent
		res, err := prog.Evaluate(context.Background(), d, nil)
		b, _ := json.Marshal(res)
		return string(b), fmt.Sprint(err)
	}
	wantRes, wantErr := run(false)
	for range 5 {
		gotRes, gotErr := run(true)
		if gotRes != wantRes || gotErr != wantErr {
			t.Fatalf("concurrent:\n%s\n%s\nsequential:\n%s\n%s", gotRes, gotErr, wantRes, wantErr)
		}
	}
}

// A formula that reads $env makes the evaluation sequential.
func TestEnvMakesEvaluationSequential(t *testing.T) {
	prog, errs := Compile(Spec{Defs: []Def{
		{Name: "a", Kind: KindDerived, Expr: `1`},
		{Name: "b", Kind: KindMetric, Expr: `$env["a"]`},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if prog.concurrent {
		t.Error("a program reading $env is concurrent")
	}
}
