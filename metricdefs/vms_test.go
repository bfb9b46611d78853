package metricdefs

import (
	"reflect"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/joulebench/joulebench/archive/record"
)

// A lent VM runs one program after another as a new one would, and keeps
// no reference to what its stack held.
func TestVMsRun(t *testing.T) {
	env := map[string]any{"xs": []any{1.5, 2.5, 3.5}}
	var progs []*vm.Program
	for _, src := range []string{`map(xs, # * 2)`, `len(filter(xs, # > 2))`, `map(1..1000, #)[999]`, `xs[5]`, `sum(xs)`} {
		p, err := expr.Compile(src, expr.Env(env))
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	var m vms
	for round := range 2 {
		for i, p := range progs {
			want, werr := expr.Run(p, env)
			got, gerr := m.run(p, env)
			if !reflect.DeepEqual(got, want) || (gerr == nil) != (werr == nil) {
				t.Errorf("round %d, program %d: %v, %v; expr.Run %v, %v", round, i, got, gerr, want, werr)
			}
		}
	}
	v, ok := m.pool.Get().(*vm.VM)
	if !ok {
		t.Skip("a collection emptied the pool")
	}
	for i, x := range v.Stack[:cap(v.Stack)] {
		if x != nil {
			t.Fatalf("stack[%d] still holds %v", i, x)
		}
	}
}

// The VMs lent for a run of many requests start with a stack that holds a
// list as long as its requests: a map over them grows no stack (grown by
// append, it would be copied some ten times on its way). A run of few
// requests leaves the stack to grow as it must.
func TestVMsStackSizedForRequests(t *testing.T) {
	if m := newVMs(&Data{Requests: make([]*record.Request, 10)}); m.stack != 0 {
		t.Errorf("10 requests: stacks sized for %d values, want none sized", m.stack)
	}
	const n = 5000
	m := newVMs(&Data{Requests: make([]*record.Request, n)})
	xs := make([]any, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	env := map[string]any{"xs": xs}
	p, err := expr.Compile(`map(xs, # * 2)`, expr.Env(env))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.run(p, env)
	if err != nil || len(got.([]any)) != n {
		t.Fatalf("map: %d values, %v", len(got.([]any)), err)
	}
	v, ok := m.pool.Get().(*vm.VM)
	if !ok {
		t.Skip("a collection emptied the pool")
	}
	if want := n + 16; cap(v.Stack) != want { // the requests and 16 more
		t.Errorf("stack of capacity %d after a map over %d values, want %d (sized beforehand, never grown)", cap(v.Stack), n, want)
	}
}
