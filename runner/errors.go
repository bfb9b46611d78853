package runner

import (
	"fmt"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// Exit codes of a run, as the command line returns them: scripts that run
// campaigns tell them apart (internal/exitcode holds them for every
// command).
const (
	// CodeFailure: the run failed (I/O, engine, telemetry).
	CodeFailure = int(exitcode.Failure)
	// CodeInvalid: invalid input (an option, profile, dataset or archive
	// that cannot be used); nothing was run.
	CodeInvalid = int(exitcode.Invalid)
	// CodeChecks: a check of severity fail or exclude did not pass.
	CodeChecks = int(exitcode.Checks)
	// CodeEval: a formula could not be evaluated on the run's data.
	CodeEval = int(exitcode.Eval)
	// CodeInterrupted: the run was interrupted (its context cancelled).
	CodeInterrupted = int(exitcode.Interrupted)
)

// WithCode gives err an exit code (nil stays nil).
func WithCode(code int, err error) error { return exitcode.With(exitcode.Code(code), err) }

// Invalidf is an invalid-input error (CodeInvalid).
func Invalidf(format string, args ...any) error {
	return exitcode.With(exitcode.Invalid, fmt.Errorf(format, args...))
}

// CodeOf is the exit code of err: the outermost code in its chain
// (internal/exitcode), CodeFailure when none.
func CodeOf(err error) int { return exitcode.Of(err) }
