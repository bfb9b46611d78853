package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// Ctrl-C during the formal stage: the run ends interrupted, its stages
// end at the last power sample, and the energy metrics are computable
// from the archive (the formal stage does not outrun the power data).
// The progress on a non-TTY writer has no carriage return.
func TestRunInterruptedDuringFormal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	args := []string{"run", "benchmark-1.5", "--out", dir, "--set", "baseline=1s", "--set", "release_hold=1s",
		"--set", "sample_interval=100ms", "--set", "request_count=400", "--set", "warmup_requests=2"}
	go func() { done <- newApp(&out, &errOut).execute(ctx, args) }()
	// Wait for the formal stage to be recorded (it is written when it
	// begins), then interrupt.
	deadline := time.After(60 * time.Second)
	for !stageRecorded(dir, "formal") {
		select {
		case err := <-done:
			t.Fatalf("run ended before its formal stage: %v\n%s", err, errOut.String())
		case <-deadline:
			t.Fatal("no formal stage within 60 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := exitCode(<-done); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, errOut.String())
	}
	if strings.Contains(errOut.String(), "\r") {
		t.Error("progress wrote carriage returns to a writer that is not a terminal")
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	fo, ok := run.Meta.StageByName("formal")
	if !ok || fo.Open {
		t.Fatalf("formal stage %+v, want it ended", run.Meta.Stages)
	}
	var last float64
	for _, p := range run.Power {
		last = max(last, p.T)
	}
	if fo.End > last {
		t.Errorf("formal ends at %v, after the last power sample %v", fo.End, last)
	}
	aout, aerr, _ := runCLI(t, "analyze", dir, "--format", "json")
	var got map[string]record.Result
	if err := json.Unmarshal([]byte(aout), &got); err != nil {
		t.Fatalf("%v\n%s", err, aerr)
	}
	for _, m := range []string{"formal_energy_j", "startup_energy_j"} {
		if v, ok := got[m].Value.(float64); !ok || v <= 0 {
			t.Errorf("%s = %+v, want a positive energy", m, got[m])
		}
	}
}

// stageRecorded reports whether dir's run.json holds the stage (stages are
// written when they begin).
func stageRecorded(dir, stage string) bool {
	if _, err := os.Stat(filepath.Join(dir, archive.RunFile)); err != nil {
		return false
	}
	m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
	if err != nil {
		return false
	}
	_, ok := m.StageByName(stage)
	return ok
}

// A run killed (kill -9) during its formal stage: run.json says running,
// the formal stage has no end and there is no release. analyze evaluates
// what it can: the formal stage is clamped to the last power sample, the
// values over it say they are partial, and the release values say which
// stage is missing; the run is incomplete (check run_finished fails:
// exit 3), never passed off as a finished run.
func TestAnalyzeKilledDuringFormal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{archive.PowerFile, archive.RequestsFile, "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "run-small", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	var meta map[string]any
	b, _ := os.ReadFile(filepath.Join("testdata", "run-small", archive.RunFile))
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	meta["status"] = record.StatusRunning
	meta["stages"] = []map[string]any{
		{"name": "baseline", "start": 0, "end": 5},
		{"name": "startup", "start": 5, "end": 10},
		{"name": "formal", "start": 10}, // open
	}
	b, _ = json.Marshal(meta)
	os.WriteFile(filepath.Join(dir, archive.RunFile), b, 0o644)

	// benchmark-1.5 guards the release stage with `when:`, so a run
	// without one evaluates (its release values are not applicable).
	out, errOut, code := runCLI(t, "analyze", dir, "--format", "json")
	if code != exitChecks || !strings.Contains(errOut, "incomplete run: status running") {
		t.Fatalf("exit %d, want %d saying the run is incomplete\n%s", code, exitChecks, errOut)
	}
	var got map[string]record.Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	fe := got["formal_energy_j"]
	if v, ok := fe.Value.(float64); !ok || v <= 0 || !strings.Contains(fe.Note, "partial: stage formal") || !strings.Contains(fe.Note, "incomplete run") {
		t.Errorf("formal_energy_j = %+v, want an energy noted partial", fe)
	}
	if su := got["startup_energy_j"]; strings.Contains(su.Note, "partial") {
		t.Errorf("startup_energy_j = %+v: the startup stage ended, it is not partial", su)
	}
	if r := got["release_energy_j"]; r.Value != nil || !strings.Contains(r.Note, "no release stage") {
		t.Errorf("release_energy_j = %+v, want not applicable", r)
	}

	// A formula that reads the missing stage without a guard: a clear
	// error, and report exits as analyze does.
	prof := filepath.Join(t.TempDir(), "p.yaml")
	src, err := os.ReadFile(filepath.Join("..", "..", "profiles", "benchmark-1.5.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "metrics:\n", "metrics:\n  - {name: release_s, unit: s, expr: stages.release.end - stages.release.start}\n", 1))
	os.WriteFile(prof, src, 0o644)
	_, errOut, code = runCLI(t, "analyze", dir, "--profile", prof)
	if code != exitEval || !strings.Contains(errOut, "metric release_s: this run has no stage release (it has: baseline, formal, startup)") {
		t.Errorf("analyze: exit %d, want %d naming the stage:\n%s", code, exitEval, errOut)
	}
	for _, cmd := range [][]string{{"report", dir, "--profile", prof}, {"compare", dir, "--profile", prof}} {
		if _, errOut, code := runCLI(t, cmd...); code != exitEval {
			t.Errorf("%s: exit %d, want %d as analyze\n%s", cmd[0], code, exitEval, errOut)
		}
	}
}
