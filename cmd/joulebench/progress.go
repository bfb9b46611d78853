package main

import (
	"io"
	"time"

	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/steps"
)

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool { return progress.IsTTY(w) }

// progress shows a run's progress: a line redrawn in place on a terminal
// (log lines through console go above it; finish ends it), else a plain
// line when a stage begins and every progressLineEvery. --no-progress:
// nothing.
func (a *app) progress(label string, console *progress.Console) (update func(steps.Progress), finish func()) {
	if a.v.GetBool("no-progress") {
		return nil, nil
	}
	if !a.errTTY {
		return progress.Lines(a.errOut, progress.LineEvery, label, time.Now), nil
	}
	t := progress.NewTTY(a.errOut, label, time.Now, progress.TerminalWidth(a.rawErr), progress.Redraw)
	if console != nil {
		console.Attach(t)
	}
	return t.Update, func() {
		t.Finish()
		if console != nil {
			console.Attach(nil)
		}
	}
}
