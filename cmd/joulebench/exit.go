package main

import (
	"github.com/joulebench/joulebench/internal/exitcode"
)

// Exit codes (internal/exitcode says what each means).
const (
	exitOK          = int(exitcode.OK)
	exitFailure     = int(exitcode.Failure)
	exitInvalid     = int(exitcode.Invalid)
	exitChecks      = int(exitcode.Checks)
	exitEval        = int(exitcode.Eval)
	exitInterrupted = int(exitcode.Interrupted)
)

type exitError struct {
	code   int
	err    error
	silent bool // already reported
}

func (e *exitError) Error() string       { return e.err.Error() }
func (e *exitError) Unwrap() error       { return e.err }
func (e *exitError) Exit() exitcode.Code { return exitcode.Code(e.code) }

func withCode(code int, err error) error { return exitcode.With(exitcode.Code(code), err) }

// exitCode is the outermost exit code in err's chain (exitFailure if none).
func exitCode(err error) int { return exitcode.Of(err) }
