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
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"power.csv", "requests.jsonl", "run.json"} {
		b, err := os.ReadFile(filepath.Join(smallRun, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "run.json" {
			b = []byte(strings.Replace(string(b), `{"name": "baseline", "start": 0, "end": 5},`, "", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
