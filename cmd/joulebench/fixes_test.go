package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchmark-1.5 on an archive without a baseline stage (an imported or
// trimmed recording): the values that need the baseline (release back to
// it, and what reads the release) are not applicable with that reason,
// the rest is computed; before the fix release() failed, every dependent
// value was an error and analyze exited 4.
func TestBenchmark15WithoutBaseline(t *testing.T) {
	dir := editedSmallRun(t, func(f string, b []byte) []byte {
		if f == "run.json" {
			b = []byte(strings.Replace(string(b), `{"name": "baseline", "start": 0, "end": 5},`, "", 1))
		}
		return b
	})
	out, errOut, code := runCLI(t, "analyze", dir, "--format", "json")
	if code == exitEval || code == exitInvalid {
		t.Fatalf("exit %d: formulas failed\n%s", code, errOut)
	}
	var res map[string]jsonResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, n := range []string{"release_closed", "release_energy_j", "full_lifecycle_j_per_token"} {
		if r := res[n]; r.Value != nil || !strings.Contains(r.Note, "not applicable: no baseline stage") {
			t.Errorf("%s = %+v, want not applicable: no baseline stage", n, r)
		}
	}
	// The formal stage is unaffected: 100 W × 10 s = 1000 J.
	if v := res["formal_energy_j"].Value; v != 1000.0 {
		t.Errorf("formal_energy_j = %v, want 1000", v)
	}
}

// editedSmallRun copies testdata/run-small with edit applied to each
// file's bytes.
func editedSmallRun(t *testing.T, edit func(name string, b []byte) []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"power.csv", "requests.jsonl", "run.json", "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join(smallRun, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), edit(f, b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The power recording ends at t=22 inside the release stage [20, 30]:
// power is at its 100 W baseline from t=20, and with release_hold 5 s the
// hold (20 → 25) fits in the stage but not in the data. release_closed
// fails (the release is not confirmed) and its detail says the recording
// ended, not that power did not return to baseline within the maximum
// wait.
func TestReleaseClosedSaysRecordingEnded(t *testing.T) {
	dir := editedSmallRun(t, func(f string, b []byte) []byte {
		if f != "power.csv" {
			return b
		}
		lines := strings.SplitAfter(string(b), "\n")
		return []byte(strings.Join(lines[:24], "")) // header + t = 0…22
	})
	out, errOut, _ := runCLI(t, "analyze", dir, "--set", "release_hold=5s", "--format", "json")
	var res map[string]struct {
		Passed  *bool  `json:"passed"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	c := res["release_closed"]
	if c.Passed == nil || *c.Passed {
		t.Fatalf("release_closed = %+v, want failed", c)
	}
	text := c.Message + " | " + c.Detail
	if !strings.Contains(text, "the recording ended at t=22") || strings.Contains(text, "did not return to baseline within the maximum wait") ||
		strings.Contains(text, "did not stay within") {
		t.Errorf("release_closed says %q, want the recording ended", text)
	}
}

// A bad power row (a negative reading on line 7 of power.csv) is named by
// its file and line, as docs/archive-v1.md promises; the analysis used to
// report it as "power sample 5".
func TestBadPowerRowNamesTheLine(t *testing.T) {
	dir := editedSmallRun(t, func(f string, b []byte) []byte {
		if f != "power.csv" {
			return b
		}
		lines := strings.SplitAfter(string(b), "\n")
		lines[6] = "5,gpu0,-1,500,1000000000\n" // line 7: t = 5
		return []byte(strings.Join(lines, ""))
	})
	for _, cmd := range []string{"analyze", "plot"} {
		args := []string{cmd, dir}
		if cmd == "plot" {
			args = append(args, "--out", filepath.Join(t.TempDir(), "x.png"))
		}
		_, errOut, code := runCLI(t, args...)
		if code != exitInvalid || !strings.Contains(errOut, "power.csv:7: column power_w: -1 W is negative") || strings.Contains(errOut, "power sample") {
			t.Errorf("%s: exit %d, %q; want %d naming power.csv:7", cmd, code, errOut, exitInvalid)
		}
	}
}
