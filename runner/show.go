package runner

import (
	"fmt"
	"io"

	"github.com/joulebench/joulebench/compare"
)

// Show writes what a run of several ends with, in format: a sweep's table
// (one row per value and engine), or the engines side by side (compare:
// the comparison of the runs under r.Parent) followed by the winner table
// of r.Dirs. It returns the first failed run's error (the cause of what
// the comparison lacks), else the comparison's or the table's.
func (r Result) Show(w io.Writer, format string, compareRuns func(parent string) error) error {
	switch {
	case r.Sweep != nil:
		fmt.Fprintf(w, "\n== sweep of %s (%s): one row per value and engine\n", r.Sweep.Name, r.Parent)
		if err := r.Sweep.Render(w, format); err != nil {
			return err
		}
	case r.Parent != "":
		fmt.Fprintf(w, "\n== engines side by side (%s)\n", r.Parent)
		// compare prints its table, then says whether a formula could not
		// be evaluated; the winner table follows either way.
		cmpErr := compareRuns(r.Parent)
		if err := winnerTable(w, r.Dirs, format); err != nil && cmpErr == nil {
			cmpErr = err
		}
		if len(r.Errs) > 0 {
			return r.Errs[0]
		}
		return cmpErr
	}
	if len(r.Errs) > 0 {
		return r.Errs[0]
	}
	return nil
}

// winnerTable writes the asiai winner table of the runs in dirs: the
// winner by median tok/s, each engine's change against it, TTFT and power
// deltas, memory in use and the gates each failed. A failed engine has no
// row (its error is reported).
func winnerTable(w io.Writer, dirs []string, format string) error {
	engines := compare.AsiaiWinnerOfDirs(dirs)
	if len(engines) == 0 {
		return nil
	}
	return compare.RenderAsiaiWinner(w, engines, format)
}
