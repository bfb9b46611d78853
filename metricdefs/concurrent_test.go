package metricdefs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
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

// A large run's definitions are evaluated at most largeRunParallel at a
// time whatever the cores (each holds lists as long as the run); a small
// run's one a core.
func TestEvalParallelBoundedOnLargeRuns(t *testing.T) {
	for _, c := range []struct{ requests, procs, want int }{
		{100, 1, 1},
		{100, 16, 16},
		{65_535, 64, 64},
		{65_536, 64, 2},
		{1_000_000, 1, 1},
		{1_000_000, 2, 2},
		{1_000_000, 128, 2},
	} {
		if got := evalParallel(c.requests, c.procs); got != c.want {
			t.Errorf("evalParallel(%d requests, %d cores) = %d, want %d", c.requests, c.procs, got, c.want)
		}
	}
	// evalConcurrently keeps to it: 40 independent definitions, each
	// holding its slot a while, never more than 2 at once.
	order := make([]*compiled, 40)
	pos := map[string]int{}
	for i := range order {
		order[i] = &compiled{Def: Def{Name: fmt.Sprintf("d%d", i)}}
		pos[order[i].Name] = i
	}
	var running, most atomic.Int32
	evalConcurrently(order, pos, func(int) {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		running.Add(-1)
	}, 2)
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d definitions ran at once, want at most 2", m)
	}
}
