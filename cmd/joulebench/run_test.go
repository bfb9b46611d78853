package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// fastSets shrink the quick simulator run further so the test takes seconds.
var fastSets = []string{"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=8s",
	"--set", "sample_interval=100ms", "--set", "request_count=24", "--set", "warmup_requests=2", "--no-progress"}

// A run on the simulator writes an archive whose analyze reproduces
// results.json exactly.
func TestRunThenAnalyzeReproducesResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "run")
	// Power settles about 10 s after the engine stops: give release 25 s.
	out, errOut, code := runCLI(t, append(append([]string{"run", "benchmark-1.5", "--out", dir}, fastSets...), "--set", "release_max_wait=25s")...)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Results == nil || run.Meta.Status != archive.StatusComplete || !run.Meta.Simulated {
		t.Fatalf("archive: status %q simulated %v results %v", run.Meta.Status, run.Meta.Simulated, run.Results != nil)
	}
	for _, st := range []string{"baseline", "startup", "warmup", "formal", "release"} {
		if _, ok := run.Meta.StageByName(st); !ok {
			t.Errorf("stage %s missing from run.json", st)
		}
	}
	aout, errOut, code := runCLI(t, "analyze", dir, "--format", "json")
	if code != exitOK {
		t.Fatalf("analyze: exit %d\n%s", code, errOut)
	}
	var got map[string]archive.Result
	if err := json.Unmarshal([]byte(aout), &got); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(pick(run.Results))
	gotJSON, _ := json.Marshal(got)
	if string(wantJSON) != string(gotJSON) {
		t.Errorf("analyze differs from results.json:\nresults.json %s\nanalyze      %s", wantJSON, gotJSON)
	}
	if v := got["release_closed"]; v.Passed == nil || !*v.Passed {
		t.Errorf("release should close on the default simulator: %+v", v)
	}
}

func pick(res *archive.Results) map[string]archive.Result {
	out := map[string]archive.Result{}
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
