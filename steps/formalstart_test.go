package steps

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// The formal stage opens at t0 and its first request is sent right
// after, but two synced writes of run.json lie between: in CI under
// -race they once took 2.1 s, and the run's own archive was then refused
// on re-reading (the reader allows archive.FormalLeadS = 2 s). Sent more
// than 1 s (half of it) after t0, the stage starts at the first request
// and the startup ends there; sent within 1 s, or in a replayed trace
// (which sends at its own times), the stages stay as written.
func TestFormalStageStartsAtALateFirstSend(t *testing.T) {
	cases := []struct {
		name              string
		first             float64
		trace             bool
		wantStart, wantSU float64
	}{
		{"late by 2.1 s: moved", 102.1, false, 102.1, 102.1},
		{"late by 0.9 s: kept", 100.9, false, 100, 100},
		{"a trace late by 5 s: kept", 105, true, 100, 100},
		{"no request sent: kept", 0, false, 100, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := record.Meta{RunID: "t"}
			if c.trace {
				m.RequestSet.Trace = &record.TraceWindow{StartS: 5}
			}
			w, err := archive.Create(filepath.Join(t.TempDir(), "run"), m)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			rc := &workflow.RunContext{Clock: workflow.NewClock(), Out: w, Log: zerolog.Nop()}
			rc.StageStart("startup", 90)
			if err := rc.StageEnd("startup", 100); err != nil {
				t.Fatal(err)
			}
			rc.StageStart("formal", 100)
			if err := startAtFirstSend(rc, 100, c.first); err != nil {
				t.Fatal(err)
			}
			if err := rc.StageEnd("formal", 110); err != nil {
				t.Fatal(err)
			}
			got := map[string]record.Stage{}
			for _, s := range w.Meta().Stages {
				got[s.Name] = s
			}
			if s := got["formal"]; s.Start != c.wantStart || s.End != 110 || s.Open {
				t.Errorf("formal %+v, want %v to 110", s, c.wantStart)
			}
			if s := got["startup"]; s.Start != 90 || s.End != c.wantSU {
				t.Errorf("startup %+v, want 90 to %v", s, c.wantSU)
			}
		})
	}
}
