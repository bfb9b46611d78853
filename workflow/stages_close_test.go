package workflow_test

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// A run that stops early closes its open stages at the stop, but never
// before the latest of them started: a failure noticed at t (a power
// source that died at 10.0) while the warm-up began later (10.4) ends the
// startup and the warm-up at 10.4, so the warm-up still lies inside the
// startup (the archive's rule) and the failed run's archive stays
// readable.
func TestCloseOpenStagesKeepsNesting(t *testing.T) {
	w, err := archive.Create(filepath.Join(t.TempDir(), "run"), record.Meta{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rc := &workflow.RunContext{Clock: workflow.NewClock(), Out: w, Log: zerolog.Nop()}
	rc.StageStart("startup", 9.0)
	rc.StageStart("warmup", 10.4)
	if err := rc.CloseOpenStages(10.0); err != nil {
		t.Fatal(err)
	}
	got := map[string]record.Stage{}
	for _, s := range w.Meta().Stages {
		got[s.Name] = s
	}
	if s := got["startup"]; s.Start != 9.0 || s.End != 10.4 || s.Open {
		t.Errorf("startup %+v, want 9.0 to 10.4", s)
	}
	if s := got["warmup"]; s.Start != 10.4 || s.End != 10.4 || s.Open {
		t.Errorf("warmup %+v, want 10.4 to 10.4", s)
	}
}
