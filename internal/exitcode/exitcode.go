// Package exitcode classifies errors by what they tell whoever ran a
// command, as distinct exit codes: invalid input (nothing was run), a
// failed check, a formula that could not be evaluated, an interruption,
// or any other failure. Library packages mark their errors with a Code;
// the command line turns the outermost mark into the process's exit code.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is an exit code. Scripts that run campaigns tell these apart.
type Code int

const (
	// OK: the command did what it was asked.
	OK Code = 0
	// Failure: a run or command failed (I/O, engine, telemetry).
	Failure Code = 1
	// Invalid: invalid input: a flag, profile, expression, dataset or
	// archive that cannot be used. Nothing was run.
	Invalid Code = 2
	// Checks: a check of severity fail or exclude did not pass.
	Checks Code = 3
	// Eval: a formula could not be evaluated on this run's data.
	Eval Code = 4
	// Interrupted: the run was interrupted (Ctrl-C, SIGTERM, SIGHUP).
	Interrupted Code = 130
)

// Coder is an error that carries an exit code; Of finds the outermost one
// in an error's chain, whichever package made it. The method returns a
// Code so that no other error is taken for one: a child process's
// *exec.ExitError has an ExitCode() int, and its code is not joulebench's.
type Coder interface {
	error
	Exit() Code
}

// Error is an error marked with an exit code.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Exit is the code the error is marked with.
func (e *Error) Exit() Code { return e.Code }

// With marks err with code; a nil err stays nil.
func With(code Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Invalidf is an invalid-input error made as fmt.Errorf makes one.
func Invalidf(format string, args ...any) error {
	return &Error{Code: Invalid, Err: fmt.Errorf(format, args...)}
}

// Of is the exit code of err: the outermost mark in its chain, Failure
// when it has none, OK for nil.
func Of(err error) int {
	if err == nil {
		return int(OK)
	}
	var c Coder
	if errors.As(err, &c) {
		return int(c.Exit())
	}
	return int(Failure)
}

// Keep wraps err with what (fmt.Errorf's "%s: %w"), keeping its exit code
// at the outside.
func Keep(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return With(Code(Of(err)), fmt.Errorf(format+": %w", append(args, err)...))
}
