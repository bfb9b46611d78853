package metricdefs

import (
	"fmt"
	"math"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr evaluates int arithmetic in Go ints, which wrap on overflow. The
// operators +, - and * on two ints are replaced at compile time (expr's
// operator overloading) by these checked functions, so that an overflow is
// an evaluation error naming the operation instead of a wrapped value.
// Operands whose type is unknown at compile time (any) keep expr's own
// arithmetic.
const (
	checkedAdd = "__int_add"
	checkedSub = "__int_sub"
	checkedMul = "__int_mul"
)

func intArgs(p []any) (int, int) { return p[0].(int), p[1].(int) }

func overflow(a int, op string, b int) error {
	return fmt.Errorf("integer overflow: %d %s %d does not fit in 64 bits (use a float, e.g. %d.0 %s %d)", a, op, b, a, op, b)
}

func addInt(a, b int) (int, error) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, overflow(a, "+", b)
	}
	return s, nil
}

func subInt(a, b int) (int, error) {
	s := a - b
	if (b < 0 && s < a) || (b > 0 && s > a) {
		return 0, overflow(a, "-", b)
	}
	return s, nil
}

func mulInt(a, b int) (int, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
		return 0, overflow(a, "*", b)
	}
	return p, nil
}

// checkedIntOptions registers the checked functions, then the operator
// overloads that use them (in that order: expr looks the functions up when
// the overload option is applied).
func checkedIntOptions() []expr.Option {
	sig := new(func(int, int) int)
	return []expr.Option{
		expr.Function(checkedAdd, func(p ...any) (any, error) { return addInt(intArgs(p)) }, sig),
		expr.Function(checkedSub, func(p ...any) (any, error) { return subInt(intArgs(p)) }, sig),
		expr.Function(checkedMul, func(p ...any) (any, error) { return mulInt(intArgs(p)) }, sig),
		expr.Operator("+", checkedAdd),
		expr.Operator("-", checkedSub),
		expr.Operator("*", checkedMul),
	}
}

// Operands of unknown type (any: an element of a map, a value of a mixed
// list) and the sum() built-in escape the operator overloads above: the
// checkedPatch visitor rewrites them, after type checking, into calls of
// these functions, which check int overflow at run time and otherwise do
// what expr's own arithmetic does.
const (
	anyAdd     = "__any_add"
	anySub     = "__any_sub"
	anyMul     = "__any_mul"
	checkedSum = "__checked_sum"
)

// anyArith applies the checked int operation when both operands are ints,
// else expr's own.
func anyArith(intOp func(a, b int) (int, error), other func(a, b any) any) func(p ...any) (any, error) {
	return func(p ...any) (any, error) {
		a, aInt := p[0].(int)
		b, bInt := p[1].(int)
		if aInt && bInt {
			return intOp(a, b)
		}
		return other(p[0], p[1]), nil
	}
}

// sumChecked sums a list as expr's sum() does (ints to an int, any float
// makes the sum a float), with the int sum checked for overflow.
func sumChecked(p ...any) (any, error) {
	v := reflect.ValueOf(p[0])
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, fmt.Errorf("sum: want a list, got %T", p[0])
	}
	n := 0
	f := 0.0
	isFloat := false
	for i := range v.Len() {
		e := v.Index(i)
		for e.Kind() == reflect.Interface || e.Kind() == reflect.Pointer {
			if e.IsNil() {
				return nil, fmt.Errorf("sum: element %d is nil", i)
			}
			e = e.Elem()
		}
		switch {
		case e.CanInt():
			s, err := addInt(n, int(e.Int()))
			if err != nil {
				return nil, fmt.Errorf("sum: %w", err)
			}
			n = s
		case e.CanUint():
			if e.Uint() > math.MaxInt {
				return nil, fmt.Errorf("sum: element %d (%d) does not fit in 64-bit int", i, e.Uint())
			}
			s, err := addInt(n, int(e.Uint()))
			if err != nil {
				return nil, fmt.Errorf("sum: %w", err)
			}
			n = s
		case e.CanFloat():
			isFloat = true
			f += e.Float()
		default:
			return nil, fmt.Errorf("sum: element %d is a %s, not a number", i, e.Type())
		}
	}
	if isFloat {
		return f + float64(n), nil
	}
	return n, nil
}

// checkedPatch rewrites +, - and * with an operand of unknown type, and
// sum(), into the checked functions above.
type checkedPatch struct{}

func unknownType(n ast.Node) bool {
	t := n.Type()
	return t == nil || t.Kind() == reflect.Interface
}

func (checkedPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		fn := map[string]string{"+": anyAdd, "-": anySub, "*": anyMul}[n.Operator]
		if fn != "" && (unknownType(n.Left) || unknownType(n.Right)) {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{n.Left, n.Right}})
		}
	case *ast.BuiltinNode:
		if n.Name != "sum" || len(n.Arguments) == 0 {
			return
		}
		list := n.Arguments[0]
		if len(n.Arguments) == 2 {
			list = &ast.BuiltinNode{Name: "map", Arguments: []ast.Node{n.Arguments[0], n.Arguments[1]}}
		}
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: checkedSum}, Arguments: []ast.Node{list}})
	}
}

// checkedAnyOptions registers the run-time checked functions and the
// patch that calls them.
func checkedAnyOptions() []expr.Option {
	anySig := new(func(any, any) any)
	return []expr.Option{
		expr.Function(anyAdd, anyArith(addInt, runtime.Add), anySig),
		expr.Function(anySub, anyArith(subInt, runtime.Subtract), anySig),
		expr.Function(anyMul, anyArith(mulInt, runtime.Multiply), anySig),
		expr.Function(checkedSum, sumChecked, new(func([]int) int), new(func([]float64) float64), new(func([]any) any)),
		expr.Patch(checkedPatch{}),
	}
}
