package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

// foreign is an error of another package that carries a code of its own.
type foreign struct{ code int }

func (f foreign) Error() string { return "foreign" }
func (f foreign) ExitCode() int { return f.code }

func TestOf(t *testing.T) {
	base := errors.New("base")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain", base, 1},
		{"marked", With(Invalid, base), 2},
		{"wrapped mark", fmt.Errorf("ctx: %w", With(Eval, base)), 4},
		{"outermost wins", With(Checks, fmt.Errorf("ctx: %w", With(Invalid, base))), 3},
		{"another package's coder", fmt.Errorf("x: %w", foreign{130}), 130},
		{"invalidf", Invalidf("--set %q: expected key=value", "x"), 2},
		{"keep", Keep(With(Interrupted, base), "run %s", "d"), 130},
		{"joined", errors.Join(base, With(Eval, base)), 4},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of = %d, want %d", tc.name, got, tc.want)
		}
	}
	if With(Invalid, nil) != nil || Keep(nil, "x") != nil {
		t.Error("a nil error must stay nil")
	}
	if got := Keep(With(Invalid, base), "run %s", "d").Error(); got != "run d: base" {
		t.Errorf("Keep text = %q", got)
	}
	if got := Invalidf("a %d", 1).Error(); got != "a 1" {
		t.Errorf("Invalidf text = %q", got)
	}
}
