package exitcode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// childExit is the *exec.ExitError of a child that exited 3 (the test
// binary, run to exit 3).
func childExit(t *testing.T) error {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperExit3$")
	cmd.Env = append(os.Environ(), "EXITCODE_HELPER=1")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper: %v", err)
	}
	return err
}

// TestHelperExit3 is the child of childExit.
func TestHelperExit3(t *testing.T) {
	if os.Getenv("EXITCODE_HELPER") == "1" {
		os.Exit(3)
	}
}

// foreign is an error of another package that carries a code of its own.
type foreign struct{ code Code }

func (f foreign) Error() string { return "foreign" }
func (f foreign) Exit() Code    { return f.code }

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
		// A child's exit status is no exit code of this process.
		{"child exit", fmt.Errorf("engine: %w", childExit(t)), 1},
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
