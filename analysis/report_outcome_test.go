package analysis

import (
	"context"
	"io"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// report exits as analyze does on each of its runs: sample-run fails a
// check of severity exclude (exit Checks under analyze), sample-run-ok
// passes; a report over both fails.
func TestReportExitsAsAnalyze(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		dirs []string
		want int
	}{
		{"failing run", []string{sampleRun}, int(exitcode.Checks)},
		{"passing run", []string{sampleRunOK}, int(exitcode.OK)},
		{"both", []string{sampleRunOK, sampleRun}, int(exitcode.Checks)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := noUserDirs().Report(ctx, tc.dirs, "", false)
			if err != nil {
				t.Fatal(err)
			}
			if got := exitcode.Of(r.Outcome()); got != tc.want {
				t.Errorf("report exit %d (%v), want %d", got, r.Outcome(), tc.want)
			}
			for _, dir := range tc.dirs[len(tc.dirs)-1:] {
				analyze := exitcode.Of(noUserDirs().ShowRun(ctx, io.Discard, dir, "", nil, View{Format: "table"}))
				if analyze != tc.want {
					t.Errorf("analyze %s exits %d, report %d", dir, analyze, tc.want)
				}
			}
		})
	}
}
