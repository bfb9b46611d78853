package analysis

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A quick simulated run (sample-run-ok: release_hold 5 s, baseline 4 s,
// request_count 7 in its run.json, where its profile's defaults are 30 s,
// 20 s and 1000) re-analysed with --profile naming its own profile's text
// gives the very values of its own evaluation: the archived parameters
// stand. A parameter new in the file takes its default, one of run.json
// the file lacks is left out and named, --set overrides, and Params says
// where each value came from.
func TestReanalysisKeepsTheRunsParameters(t *testing.T) {
	ctx := context.Background()
	own, err := noUserDirs().Evaluate(ctx, sampleRunOK, "", nil)
	if err != nil || own.EvalErr != nil {
		t.Fatal(err, own.EvalErr)
	}
	src, err := os.ReadFile(filepath.Join(sampleRunOK, "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	same := filepath.Join(dir, "same.yaml")
	if err := os.WriteFile(same, src, 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := noUserDirs().Evaluate(ctx, sampleRunOK, same, nil)
	if err != nil || other.EvalErr != nil {
		t.Fatal(err, other.EvalErr)
	}
	for _, n := range own.Results.Order {
		a, _ := json.Marshal(own.Results.Values[n])
		b, _ := json.Marshal(other.Results.Values[n])
		if string(a) != string(b) {
			t.Errorf("%s: own profile %s, --profile with its text %s", n, a, b)
		}
	}
	// run.json has 16 parameters (the archive predates the others).
	if r := other.Params.Names(ParamFromRun); !slices.Contains(r, "release_hold") || len(r) != len(own.Run.Meta.Parameters) {
		t.Errorf("from run.json: %v, want all %d of run.json", r, len(own.Run.Meta.Parameters))
	}
	for _, d := range other.Params.Names(ParamFromDefault) {
		if _, ok := own.Run.Meta.Parameters[d]; ok {
			t.Errorf("%s took the profile's default although run.json has it", d)
		}
	}
	if got := other.Loaded.Params["release_hold"]; got != 5.0 {
		t.Errorf("release_hold = %v, want the run's 5 s", got)
	}

	// The file renames window_x (new: its default 7) and drops
	// release_tolerance (archived, not applied); --set overrides baseline.
	edited := regexp.MustCompile(`\brelease_tolerance\b`).ReplaceAllString(string(src), "release_tolerance_x")
	edited = strings.Replace(edited, "parameters:\n", "parameters:\n  window_x: {type: int, default: 7, description: new in this file}\n", 1)
	editedPath := filepath.Join(dir, "edited.yaml")
	if err := os.WriteFile(editedPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := noUserDirs().Evaluate(ctx, sampleRunOK, editedPath, []string{"baseline=3s"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]any{"window_x": int64(7), "release_hold": 5.0, "baseline": 3.0} {
		if got := e.Loaded.Params[name]; got != want && !(isInt(got) && isInt(want) && toI(got) == toI(want)) {
			t.Errorf("%s = %v (%T), want %v", name, got, got, want)
		}
	}
	for name, want := range map[string]string{"window_x": ParamFromDefault, "release_tolerance_x": ParamFromDefault, "release_hold": ParamFromRun, "baseline": ParamFromSet} {
		if got := e.Params.From[name]; got != want {
			t.Errorf("%s came from %q, want %q", name, got, want)
		}
	}
	if !slices.Equal(e.Params.Ignored, []string{"release_tolerance"}) {
		t.Errorf("ignored %v, want [release_tolerance]", e.Params.Ignored)
	}
	line := e.Params.String()
	for _, w := range []string{"35 profile default (accept_unsteady, ", ", … 27 more", "1 --set (baseline)", "1 of run.json not in the profile, ignored (release_tolerance)"} {
		if !strings.Contains(line, w) {
			t.Errorf("provenance %q lacks %q", line, w)
		}
	}
}

func isInt(v any) bool {
	switch v.(type) {
	case int, int64:
		return true
	}
	return false
}

func toI(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	return 0
}
