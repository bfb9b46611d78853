package metricdefs

import (
	"context"
	"fmt"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// A list of numbers longer than results.json stores (64 items) is kept
// whole in memory: compare reads a long run's every steady window
// (steady_window_j_per_token, 70 here: 0.2, 0.2001, …, 0.2069) from the
// results Evaluate returns, results.json is never read back (the
// archive's writer summarises the list there). A list of anything else
// (requests) over 64 items is still summarised in memory, and so is a
// list of numbers over maxNumbersInMemory.
func TestLongNumberListKeptInMemory(t *testing.T) {
	run := &record.Run{Meta: record.Meta{RunID: "long"}}
	for range 70 {
		run.Requests = append(run.Requests, record.Request{Phase: "formal", OK: true})
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	prog, errs := Compile(Spec{Defs: []Def{
		{Name: "windows", Kind: KindDerived, Expr: `map(0..69, 0.2 + # * 0.0001)`},
		{Name: "huge", Kind: KindDerived, Expr: `map(0..(maxN), 1.0)`},
		{Name: "reqs", Kind: KindDerived, Expr: `requests`},
	}, Params: []Param{{Name: "maxN", Value: maxNumbersInMemory}}})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	res, err := prog.Evaluate(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := res.Values["windows"].Value.([]any)
	if !ok || len(w) != 70 || w[0] != 0.2 || w[69] != 0.2+69*0.0001 {
		t.Errorf("windows: %+v, want all 70 numbers in memory", res.Values["windows"])
	}
	for name, n := range map[string]int{"huge": maxNumbersInMemory + 1, "reqs": 70} {
		if r := res.Values[name]; r.Value != nil || r.Note != fmt.Sprintf("list of %d items (not stored)", n) {
			t.Errorf("%s: value %T, note %q; want summarised as a list of %d items", name, r.Value, r.Note, n)
		}
	}
}
