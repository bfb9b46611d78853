package metricdefs

import (
	"fmt"
	"math"

	"github.com/expr-lang/expr"
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
