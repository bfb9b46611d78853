package runner

import (
	"errors"
	"fmt"
)

// Exit codes of a run, as the command line returns them: scripts that run
// campaigns tell them apart.
const (
	// CodeFailure: the run failed (I/O, engine, telemetry).
	CodeFailure = 1
	// CodeInvalid: invalid input (an option, profile, dataset or archive
	// that cannot be used); nothing was run.
	CodeInvalid = 2
	// CodeChecks: a check of severity fail or exclude did not pass.
	CodeChecks = 3
	// CodeEval: a formula could not be evaluated on the run's data.
	CodeEval = 4
	// CodeInterrupted: the run was interrupted (its context cancelled).
	CodeInterrupted = 130
)

// Error is an error with the exit code it calls for.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the code the command line exits with.
func (e *Error) ExitCode() int { return e.Code }

// WithCode gives err an exit code (nil stays nil).
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Invalidf is an invalid-input error (CodeInvalid).
func Invalidf(format string, args ...any) error {
	return &Error{Code: CodeInvalid, Err: fmt.Errorf(format, args...)}
}

// CodeOf is the exit code of err: that of the first error in its chain
// with an ExitCode method (this package's Error, or a caller's own type),
// CodeFailure otherwise.
func CodeOf(err error) int {
	var c interface{ ExitCode() int }
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return CodeFailure
}
