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

// A VM lent for a run of many requests is given, before a formula with a
// loop, a stack that holds a list as long as the requests: a map over
// them grows no stack (grown by append, it would be copied some ten times
// on its way). A formula without a loop leaves the stack small, and a run
// of few requests leaves it to grow as it must.
func TestVMsStackSizedForRequests(t *testing.T) {
	if m := newVMs(&Data{Requests: make([]*record.Request, 10)}); m.stack != 0 {
		t.Errorf("10 requests: stacks sized for %d values, want none sized", m.stack)
	}
	const n = 5000
	xs := make([]any, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	env := map[string]any{"xs": xs}
	for _, c := range []struct {
		src     string
		sized   bool
		wantLen int
	}{
		{`len(xs) + 1`, false, 0},
		{`map(xs, # * 2)`, true, n},
	} {
		m := newVMs(&Data{Requests: make([]*record.Request, n)})
		p, err := expr.Compile(c.src, expr.Env(env))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.run(p, env)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if l, ok := got.([]any); ok && len(l) != c.wantLen {
			t.Fatalf("%s: %d values, want %d", c.src, len(l), c.wantLen)
		}
		v, ok := m.pool.Get().(*vm.VM)
		if !ok {
			t.Skip("a collection emptied the pool")
		}
		want := n + 16 // the requests and 16 more
		if sized := cap(v.Stack) == want; sized != c.sized {
			t.Errorf("%s: stack of capacity %d after running, sized for %d values: %v, want %v (sized beforehand, never grown)", c.src, cap(v.Stack), want, sized, c.sized)
		}
	}
}
