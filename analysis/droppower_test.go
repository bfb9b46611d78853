package analysis

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// ShowRun (analyze) frees the run's power rows once evaluation has indexed
// them (issue 46: 160 MB at a million requests over 10 h of 8 GPUs), and
// shows what Evaluate's results show: the same values, and the same "no
// reading" of a run whose every power reading is 0 W (found before the
// rows go).
func TestShowRunFreesPowerRows(t *testing.T) {
	zero := func(t *testing.T) string { return zeroedArchive(t, 0, math.Inf(1)) }
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"sample-run-ok", func(*testing.T) string { return sampleRunOK }},
		{"every reading 0 W", zero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			ctx := context.Background()
			p := noUserDirs()
			v := View{Format: "json", All: true}

			e, err := p.evaluate(ctx, dir, "", nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if e.Run.Power != nil {
				t.Errorf("the run evaluated for showing keeps %d power rows, want none", len(e.Run.Power))
			}

			kept, err := p.Evaluate(ctx, dir, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(kept.Run.Power) == 0 {
				t.Fatal("Evaluate's run has no power rows, want them kept (plot and report read them)")
			}
			var want, got bytes.Buffer
			if err := ShowResults(&want, kept.Run, kept.Loaded, kept.Results, v); err != nil {
				t.Fatal(err)
			}
			err = p.ShowRun(ctx, &got, dir, "", nil, v)
			if wantCode := exitcodeOf(kept); exitcode.Of(err) != wantCode {
				t.Errorf("ShowRun: exit %d (%v), want %d", exitcode.Of(err), err, wantCode)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("ShowRun shows\n%s\nwant (Evaluate's results)\n%s", got.Bytes(), want.Bytes())
			}
		})
	}
}

// exitcodeOf is ShowRun's exit code for e's outcome.
func exitcodeOf(e *Evaluated) int {
	if e.EvalErr != nil {
		return int(exitcode.Eval)
	}
	return exitcode.Of(ChecksOutcome(e.Results))
}
