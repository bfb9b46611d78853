package metricdefs

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// The pooled ITL of a long run is tens of millions of values, and the
// profiles only ask it for its length and a few percentiles. A derived
// value defined as `itl(requests)` whose every use, in every formula, is
// the list argument of percentile, median, mean or len is therefore given
// a lazy value (*measure.ITLValues: the requests and the count) instead of
// the list; those four then compute on the values as they are generated.
// Any other use (map, an index, a comparison, $env, ...) keeps the list,
// so a profile sees the same values, types and errors either way. The
// rewrite is done on the syntax tree by the patches below: the definition
// calls the hidden itlValuesFn instead of itl, and a call of one of the
// four on a lazy value calls its hidden counterpart.
const (
	itlValuesFn     = "__itl_values"
	itlLenFn        = "__itl_len"
	itlPercentileFn = "__itl_percentile"
	itlMedianFn     = "__itl_median"
	itlMeanFn       = "__itl_mean"
)

var itlValuesType = reflect.TypeOf((*measure.ITLValues)(nil))

// itlLazyCallees maps the functions that take a lazy ITL as their list to
// their hidden counterparts, with the number of arguments they take.
var itlLazyCallees = map[string]struct {
	fn   string
	args int
}{
	"percentile": {itlPercentileFn, 2},
	"median":     {itlMedianFn, 1},
	"mean":       {itlMeanFn, 1},
}

// itlLazyOptions registers the hidden functions and the patch of the uses.
// Their errors read as those of the functions they stand for.
func itlLazyOptions() []expr.Option {
	lazy := func(p any) *measure.ITLValues { return p.(*measure.ITLValues) }
	return []expr.Option{
		expr.Function(itlValuesFn, func(p ...any) (any, error) {
			reqs, err := toRequests(p[0])
			if err != nil {
				return nil, fmt.Errorf("itl: %w", err)
			}
			var want []float64
			if len(p) > 1 {
				want = p[1].([]float64)
			}
			return measure.NewITLValues(reqs, want...)
		}, new(func([]*record.Request) *measure.ITLValues), new(func([]any) *measure.ITLValues),
			new(func([]*record.Request, []float64) *measure.ITLValues), new(func([]any, []float64) *measure.ITLValues)),
		expr.Function(itlLenFn, func(p ...any) (any, error) {
			return lazy(p[0]).Len(), nil
		}, new(func(*measure.ITLValues) int)),
		expr.Function(itlPercentileFn, func(p ...any) (any, error) {
			q, _ := toFloat(p[1])
			return lazy(p[0]).Percentile(q)
		}, new(func(*measure.ITLValues, float64) float64)),
		expr.Function(itlMedianFn, func(p ...any) (any, error) {
			return lazy(p[0]).Median()
		}, new(func(*measure.ITLValues) float64)),
		expr.Function(itlMeanFn, func(p ...any) (any, error) {
			return lazy(p[0]).Mean()
		}, new(func(*measure.ITLValues) float64)),
		expr.Patch(itlUsePatch{}),
	}
}

// itlUsePatch rewrites len, percentile, median and mean of a lazy ITL
// (known by its type, after expr's first type check) into the hidden
// functions.
type itlUsePatch struct{}

func (itlUsePatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if n.Name == "len" && len(n.Arguments) == 1 && n.Arguments[0].Type() == itlValuesType {
			callAs(node, itlLenFn, n.Arguments)
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || len(n.Arguments) == 0 || n.Arguments[0].Type() != itlValuesType {
			return
		}
		if c, ok := itlLazyCallees[id.Value]; ok && len(n.Arguments) == c.args {
			callAs(node, c.fn, n.Arguments)
		}
	}
}

// callAs replaces a call by a call of fn with the same arguments: a new
// node, since expr's checker keeps the type a call node already has.
func callAs(node *ast.Node, fn string, args []ast.Node) {
	callee := &ast.IdentifierNode{Value: fn}
	callee.SetLocation((*node).Location())
	ast.Patch(node, &ast.CallNode{Callee: callee, Arguments: args})
}

// itlRootPatch makes a lazy definition, `itl(x)`, call itlValuesFn, with
// the percentiles the profile asks of it (want, a hint: they are then
// found together) when there are any.
type itlRootPatch struct{ want []float64 }

func (p itlRootPatch) Visit(node *ast.Node) {
	if n, ok := (*node).(*ast.CallNode); ok {
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == "itl" {
			args := n.Arguments
			if len(p.want) > 0 {
				want := &ast.ConstantNode{Value: slices.Clone(p.want)}
				want.SetLocation(n.Location())
				args = append(args[:len(args):len(args)], want)
			}
			callAs(node, itlValuesFn, args)
		}
	}
}

// isITLCall reports whether src is `itl(x)` with no other call of itl.
func isITLCall(src string) bool {
	tree, err := parser.Parse(src)
	if err != nil {
		return false
	}
	call, ok := tree.Node.(*ast.CallNode)
	if !ok || len(call.Arguments) != 1 {
		return false
	}
	if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != "itl" {
		return false
	}
	u := newITLUses()
	ast.Walk(&tree.Node, u)
	return u.refs["itl"] == 1 && !u.env
}

// itlUses counts, in one formula, the references to each name and those
// that are the list argument of a function that takes a lazy ITL, and
// lists the percentiles asked of each name by a number written in the
// formula (median: 50).
type itlUses struct {
	refs, lazyOK map[string]int
	lets         map[string]bool
	env          bool
	pcts         map[string][]float64
}

func newITLUses() *itlUses {
	return &itlUses{refs: map[string]int{}, lazyOK: map[string]int{}, lets: map[string]bool{}, pcts: map[string][]float64{}}
}

func (u *itlUses) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		u.refs[n.Value]++
		if n.Value == "$env" {
			u.env = true
		}
	case *ast.VariableDeclaratorNode:
		u.lets[n.Name] = true
	case *ast.BuiltinNode:
		// Without the profile's functions, mean and median parse as expr's
		// own built-ins of the same names.
		switch n.Name {
		case "len", "mean", "median":
			if id, ok := firstIdent(n.Arguments); ok && len(n.Arguments) == 1 {
				u.lazyOK[id]++
				if n.Name == "median" {
					u.pcts[id] = append(u.pcts[id], 50)
				}
			}
		}
	case *ast.CallNode:
		callee, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			return
		}
		if id, ok := firstIdent(n.Arguments); ok {
			if c, ok := itlLazyCallees[callee.Value]; ok && len(n.Arguments) == c.args {
				u.lazyOK[id]++
				if pct, ok := numberLit(n.Arguments[len(n.Arguments)-1]); ok && callee.Value == "percentile" {
					u.pcts[id] = append(u.pcts[id], pct)
				} else if callee.Value == "median" {
					u.pcts[id] = append(u.pcts[id], 50)
				}
			}
		}
	}
}

// numberLit is the value of a number written as such.
func numberLit(n ast.Node) (float64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return float64(n.Value), true
	case *ast.FloatNode:
		return n.Value, true
	}
	return 0, false
}

func firstIdent(args []ast.Node) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	id, ok := args[0].(*ast.IdentifierNode)
	if !ok {
		return "", false
	}
	return id.Value, true
}

// lazyITLCandidates returns the derived definitions that may hold a lazy
// ITL: defined as itl(x), and used (if at all) only as the list of
// percentile, median, mean or len, in every formula of the profile, none
// of which reads $env or declares a variable of the same name; each with
// the percentiles the profile asks of it by number (sorted, distinct),
// nil when none.
func lazyITLCandidates(list []*compiled) map[string][]float64 {
	cands := map[string][]float64{}
	for _, c := range list {
		if c.Kind == KindDerived && isITLCall(c.Expr) {
			cands[c.Name] = nil
		}
	}
	if len(cands) == 0 {
		return nil
	}
	for _, c := range list {
		for _, f := range exprFields(c.Def) {
			tree, err := parser.Parse(f.src)
			if err != nil {
				continue // an error of the profile, reported by Compile
			}
			u := newITLUses()
			ast.Walk(&tree.Node, u)
			for name := range cands {
				if u.env || u.lets[name] || u.refs[name] != u.lazyOK[name] {
					delete(cands, name)
					continue
				}
				cands[name] = append(cands[name], u.pcts[name]...)
			}
		}
	}
	for name, pcts := range cands {
		slices.Sort(pcts)
		cands[name] = slices.Compact(pcts)
	}
	return cands
}
