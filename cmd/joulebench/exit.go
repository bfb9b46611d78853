package main

import (
	"errors"
	"fmt"
)

// Exit codes. Scripts that run campaigns tell these apart.
const (
	exitOK = 0
	// exitFailure: a run or command failed (I/O, engine, telemetry).
	exitFailure = 1
	// exitInvalid: invalid input: a flag, profile, expression, dataset or
	// archive that cannot be used. Nothing was run.
	exitInvalid = 2
	// exitChecks: a check of severity fail or exclude did not pass.
	exitChecks = 3
	// exitEval: a formula could not be evaluated on this run's data.
	exitEval = 4
	// exitInterrupted: the run was interrupted (Ctrl-C, SIGTERM, SIGHUP).
	exitInterrupted = 130
)

type exitError struct {
	code   int
	err    error
	silent bool // already reported
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the code the process exits with (runner.CodeOf reads it).
func (e *exitError) ExitCode() int { return e.code }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func invalidf(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

// exitCode is the exit code of err: that of the first error in its chain
// with an ExitCode method (an exitError, or the run library's
// runner.Error), exitFailure otherwise.
func exitCode(err error) int {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return exitFailure
}
