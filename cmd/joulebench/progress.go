package main

import (
	"io"

	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/internal/runprogress"
)

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool { return progress.IsTTY(w) }

// progress shows a run's progress on stderr (progress.Start: a line
// redrawn in place on a terminal, else plain lines). --no-progress:
// nothing.
func (a *app) progress(label string, console *progress.Console) (update func(runprogress.Snapshot), finish func()) {
	if a.v.GetBool("no-progress") {
		return nil, nil
	}
	return progress.Start(a.errOut, a.errTTY, a.rawErr, label, console)
}
