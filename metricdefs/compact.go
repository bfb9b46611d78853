package metricdefs

import (
	"math"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"

	"github.com/joulebench/joulebench/archive/record"
)

// A derived value that expr's checker types as a list of anything
// ([]interface{}: filter and map over the requests, e.g. formal, timed,
// ttft_ms) is a []any at run time, 16 bytes an element and, for numbers,
// a boxed float64 beside each. Such a value longer than compactMin whose
// every element is a finite float64, or a request, is held for the
// formulas after it as []float64 or []*record.Request (8 bytes an
// element): its environment field is of type any at run time
// (Program.runType), while every formula is still compiled against the
// []interface{} the checker learnt, so that type checking, errors and
// the formulas' static types are exactly as before. A shorter list stays
// a []any: tests, golden outputs and results.json see no difference, and
// the lists that matter for memory (one element a request of a large
// run) are far longer.
//
// What reads the compact value gets the same elements, of the same
// dynamic types, through reflection (len, index, slices, in, map,
// filter, sum, count, all, any, none, first, last, take, reverse, uniq,
// concat, flatten, max, min, sortBy, groupBy, reduce) or through the
// conversions of this package's built-ins (toFloats, toRequests). The
// few that switch on the list's Go type (anyListReaders), and == and !=,
// get it as a []any (compactPatch, anyList), as before.
const compactMin = 1 << 12

// compactList is v held compactly: a []any longer than compactMin of
// finite float64s as []float64, of non-nil requests as
// []*record.Request; anything else is v itself. Non-finite numbers keep
// the list a []any, whose conversion (toFloats) refuses them.
func compactList(v any) any {
	xs, ok := v.([]any)
	if !ok || len(xs) <= compactMin {
		return v
	}
	switch xs[0].(type) {
	case float64:
		if out, ok := unboxAll(xs, func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }); ok {
			return out
		}
	case *record.Request:
		if out, ok := unboxAll(xs, func(r *record.Request) bool { return r != nil }); ok {
			return out
		}
	}
	return v
}

// unboxAll is xs as a []T when every element is a T that keep accepts.
func unboxAll[T any](xs []any, keep func(T) bool) ([]T, bool) {
	out := make([]T, len(xs))
	for i, x := range xs {
		t, ok := x.(T)
		if !ok || !keep(t) {
			return nil, false
		}
		out[i] = t
	}
	return out, true
}

// boxAll is xs as a []any.
func boxAll[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// anyListFn and anyValueFn are anyList's names in formulas
// (compactPatch): for a value typed []interface{}, and for one of
// unknown type (interface{}), which may hold a list too.
const (
	anyListFn  = "__any_list"
	anyValueFn = "__any_value"
)

// anyList is a compact list (compactList) as the []any it was; any other
// value as it is.
func anyList(p ...any) (any, error) {
	switch xs := p[0].(type) {
	case []float64:
		return boxAll(xs), nil
	case []*record.Request:
		return boxAll(xs), nil
	}
	return p[0], nil
}

var anyListType = reflect.TypeOf([]any{})

// isAnyList reports whether a node is typed []interface{}: a value that
// may be held compactly at run time.
func isAnyList(n ast.Node) bool { return n.Type() == anyListType }

// mayHoldList reports whether a node is typed []interface{} or is of
// unknown type (an element of a list of lists, a branch of ?: with nil).
func mayHoldList(n ast.Node) bool {
	t := n.Type()
	return t == anyListType || t == nil || t.Kind() == reflect.Interface
}

// anyListReaders are the functions that tell a []any list argument
// from a typed one: expr's sort and join, and the built-ins of this
// package that take a list of strings (pooled_std's groups, the stages
// and domains of the power audits and domain sums).
var anyListReaders = map[string]bool{"sort": true, "join": true, "pooled_std": true,
	"power_audit": true, "domain_power_audit": true, "domain_energy": true, "domain_mean_power": true}

// compactPatch passes the values that may hold a compact list through
// anyList where they are read by anyListReaders, or compared by == or
// != (which compare a []*record.Request with a []any by type) with a
// list, so that these see a []any as before. Two operands both of
// unknown type are compared as they are: a compact list reached that
// way on both sides (say [formal][0] == [timed][0]) compares by type.
type compactPatch struct{}

func (compactPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if anyListReaders[n.Name] {
			wrapAnyLists(n.Arguments)
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && anyListReaders[id.Value] {
			wrapAnyLists(n.Arguments)
		}
	case *ast.BinaryNode:
		if (n.Operator == "==" || n.Operator == "!=") && (isAnyList(n.Left) || isAnyList(n.Right)) {
			n.Left, n.Right = wrapAnyList(n.Left), wrapAnyList(n.Right)
		}
	}
}

// wrapAnyLists passes each argument that may hold a list through
// anyList.
func wrapAnyLists(args []ast.Node) {
	for i, a := range args {
		args[i] = wrapAnyList(a)
	}
}

// wrapAnyList is n read through anyList when it may hold a list (of
// the type it has: anyListFn or anyValueFn), else n.
func wrapAnyList(n ast.Node) ast.Node {
	if !mayHoldList(n) {
		return n
	}
	fn, t := anyValueFn, anyType
	if isAnyList(n) {
		fn, t = anyListFn, anyListType
	}
	c := &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{n}}
	c.SetType(t)
	return c
}

// compactOptions registers anyList and the patch that calls it.
func compactOptions() []expr.Option {
	return []expr.Option{
		expr.Function(anyListFn, anyList, new(func([]any) []any)),
		expr.Function(anyValueFn, anyList, new(func(any) any)),
		expr.Patch(compactPatch{}),
	}
}

// held is the value c's formula gave (out) as the formulas after it get
// it: a derived list typed []interface{} held compactly (its field is of
// type any at run time), anything else as it is.
func (c *compiled) held(out any) any {
	if c.typ == anyListType && c.Kind == KindDerived {
		return compactList(out)
	}
	return out
}
