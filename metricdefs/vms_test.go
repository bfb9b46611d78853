package metricdefs

import (
	"reflect"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
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
