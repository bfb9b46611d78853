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

// fastSets shrink the quick simulator run further so the test takes seconds.
var fastSets = []string{"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=8s",
	"--set", "sample_interval=100ms", "--set", "request_count=24", "--set", "accept_unsteady=true", "--set", "warmup_requests=2", "--no-progress"}

// `run benchmark-1.5` with no flags on the simulator (the quick parameter
// set) writes an archive whose analyze reproduces results.json exactly;
// steady state is reached and release closes.
func TestRunDefaultSimReachesSteadyStateAndAnalyzeReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for about a minute")
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, "run", "benchmark-1.5", "--out", dir, "--no-progress")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Results == nil || run.Meta.Status != record.StatusComplete || !run.Meta.Simulated {
		t.Fatalf("archive: status %q simulated %v results %v", run.Meta.Status, run.Meta.Simulated, run.Results != nil)
	}
	for _, st := range []string{"baseline", "startup", "warmup", "formal", "release"} {
		if _, ok := run.Meta.StageByName(st); !ok {
			t.Errorf("stage %s missing from run.json", st)
		}
	}
	aout, aerr, code := runCLI(t, "analyze", dir, "--format", "json")
	if code != exitOK {
		t.Fatalf("analyze: exit %d\n%s", code, aerr)
	}
	var got map[string]record.Result
	if err := json.Unmarshal([]byte(aout), &got); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(pick(run.Results))
	gotJSON, _ := json.Marshal(got)
	if string(wantJSON) != string(gotJSON) {
		t.Errorf("analyze differs from results.json:\nresults.json %s\nanalyze      %s", wantJSON, gotJSON)
	}
	for _, c := range []string{"release_closed", "steady_state_reached"} {
		if v := got[c]; v.Passed == nil || !*v.Passed {
			t.Errorf("%s should pass on the default simulator: %+v", c, v)
		}
	}
	if v, ok := got["steady_state_j_per_token"].Value.(float64); !ok || v <= 0 {
		t.Errorf("steady_state_j_per_token = %+v", got["steady_state_j_per_token"])
	}
	if len(run.EngineMetrics) == 0 {
		t.Error("engine_metrics.jsonl is empty: the /metrics side path was not scraped")
	}
	if !strings.Contains(out, "SIMULATED") || !strings.Contains(errOut, "quick parameter set") {
		t.Errorf("output must say simulated and name the quick parameter set:\n%s\n%s", out, errOut)
	}
}

// J/token that keeps drifting: steady_state_reached fails (severity warn)
// with the reason, and the steady-state value is not applicable.
func TestRunDriftNeverSteady(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "benchmark-1.5", "--out", dir, "--sim-preset", "drift"}, fastSets...)
	out, errOut, code := runCLI(t, append(args, "--set", "request_count=250", "--set", "max_tokens=48", "--set", "release_max_wait=30s")...)
	if code != exitOK {
		t.Fatalf("exit %d (warn checks do not fail a run)\n%s\n%s", code, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := run.Results.Values["steady_state_reached"]
	if v.Passed == nil || *v.Passed || !strings.Contains(v.Message, "CV") {
		t.Errorf("steady_state_reached = %+v, want failed with a CV reason", v)
	}
	if m := run.Results.Values["steady_state_j_per_token"]; m.Value != nil || !strings.Contains(m.Note, "not applicable") {
		t.Errorf("steady_state_j_per_token = %+v, want not applicable", m)
	}
}

// Ctrl-C: the run stops, the engine is stopped, run.json says interrupted
// and the raw data collected so far is kept.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- newApp(&out, &errOut).execute(ctx, append([]string{"run", "benchmark-1.5", "--out", dir, "--set", "baseline=2s"}, fastSets[2:]...))
	}()
	// Interrupt during the 2 s baseline stage, once run.json records it
	// (which stage is cut short does not matter; every stage must end the
	// same way).
	for !stageRecorded(dir, "baseline") {
		select {
		case err := <-done:
			t.Fatalf("run ended before its baseline: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	err := <-done
	if code := exitCode(err); code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %v\n%s", code, exitInterrupted, err, errOut.String())
	}
	run, lerr := archive.Load(dir)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if run.Meta.Status != record.StatusInterrupted || run.Meta.Reason == "" {
		t.Errorf("status %q reason %q, want interrupted with a reason", run.Meta.Status, run.Meta.Reason)
	}
	if len(run.Power) == 0 {
		t.Error("power samples collected before the interrupt were lost")
	}
}

func pick(res *record.Results) map[string]record.Result {
	out := map[string]record.Result{}
	for n, r := range res.Values {
		if r.Kind != "derived" {
			out[n] = r
		}
	}
	return out
}

// Power that never returns to baseline: release_closed fails, the run is
// marked excluded (kept, never deleted) and the command exits with 3.
func TestRunReleaseNeverCloses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, append([]string{"run", "benchmark-1.5", "--out", dir, "--sim-preset", "no-release"}, fastSets...)...)
	if code != exitChecks {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitChecks, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Meta.Excluded || run.Results == nil || !run.Results.Excluded {
		t.Errorf("run not marked excluded: meta %v results %+v", run.Meta.Excluded, run.Results)
	}
	if v := run.Results.Values["release_closed"]; v.Passed == nil || *v.Passed {
		t.Errorf("release_closed = %+v, want failed", v)
	}
}

// A bad dataset is invalid input: reported with file:line before anything
// starts, and no run directory is created.
func TestRunBadDataset(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "bad.jsonl")
	if err := os.WriteFile(data, []byte("{\"prompt\":\"hello\"}\n{\"prompt\": 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	_, errOut, code := runCLI(t, "run", "benchmark-1.5", "--out", dir, "--dataset", data, "--no-progress")
	if code != exitInvalid || !strings.Contains(errOut, "bad.jsonl:2") {
		t.Errorf("exit %d, want %d with bad.jsonl:2 in:\n%s", code, exitInvalid, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run directory created for invalid input: %v", err)
	}
}
