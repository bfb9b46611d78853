package analysis

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// editRun copies sample-run-ok and applies to its run.json each
// replacement of edits (old, new pairs, first occurrence each).
func editRun(t *testing.T, edits ...string) string {
	t.Helper()
	dir := copyArchive(t, sampleRunOK, "", "", "")
	path := filepath.Join(dir, archive.RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("run.json has no %q", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The third adversarial pass's edits of the stages and the run id
// (sample-run-ok: startup [1717405204, 1717405210] with the warm-up
// [1717405208, 1717405210] and engine_ready 1717405207.6 inside, formal
// [1717405210, 1717405220], release [1717405220, 1717405230]) are refused
// by analyze (exit 2, naming run.json, its line and the stage, event or
// field), never evaluated to other figures.
func TestStageEditsRefused(t *testing.T) {
	const (
		startup = `{"name": "startup", "start": 1717405204, "end": 1717405210}`
		formal  = `{"name": "formal", "start": 1717405210, "end": 1717405220}`
		release = `{"name": "release", "start": 1717405220, "end": 1717405230}`
	)
	for _, tc := range []struct {
		name  string
		edits []string
		msg   string
	}{
		{"1. formal start 5 s earlier, into the startup", []string{formal, `{"name": "formal", "start": 1717405205, "end": 1717405220}`},
			`stage "formal" starts at 1717405205, before stage "startup" ends at 1717405210`},
		{"1. formal end at the release's end", []string{formal, `{"name": "formal", "start": 1717405210, "end": 1717405230}`},
			`stage "release" starts at 1717405220, before stage "formal" ends at 1717405230`},
		{"1. startup and formal 5 s earlier together", []string{startup, `{"name": "startup", "start": 1717405204, "end": 1717405205}`,
			formal, `{"name": "formal", "start": 1717405205, "end": 1717405220}`},
			`stage "formal" starts at 1717405205, before stage "warmup" ends at 1717405210`},
		{"1. formal end and release start 1 s later together", []string{formal, `{"name": "formal", "start": 1717405210, "end": 1717405221}`,
			release, `{"name": "release", "start": 1717405221, "end": 1717405230}`},
			`stage "formal" ends at 1717405221, 1 s after its last response (request "f4" done_at 1717405220`},
		{"2. zero-length startup", []string{startup, `{"name": "startup", "start": 1717405204, "end": 1717405204}`},
			`stage "startup" ends at 1717405204 but stage "formal" starts at 1717405210`},
		{"2. engine_ready after the startup", []string{`{"name": "engine_ready", "t": 1717405207.6}`, `{"name": "engine_ready", "t": 1717405212}`},
			`event "engine_ready" at 1717405212 is outside stage "startup"`},
		{"9a. release removed", []string{",\n    " + release, ""},
			`stage "startup" is present but there is no "release" stage`},
		{"9d. run_id a path", []string{`"run_id": "20240603T090000Z-sample-ok"`, `"run_id": "../../etc/x"`},
			`run_id "../../etc/x": starts with '.'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editRun(t, tc.edits...)
			_, err := noUserDirs().Evaluate(context.Background(), dir, "", nil)
			if err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), filepath.Join(dir, archive.RunFile)+":") ||
				!strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v (exit %d), want refused (exit 2) naming run.json with %q", err, exitcode.Of(err), tc.msg)
			}
		})
	}
}

// estimate of a run with a zero-length startup is refused (exit 2), not
// estimated with a startup energy of 0 J.
func TestEstimateRefusesZeroLengthStartup(t *testing.T) {
	dir := editRun(t, `{"name": "startup", "start": 1717405204, "end": 1717405210}`, `{"name": "startup", "start": 1717405204, "end": 1717405204}`)
	var w bytes.Buffer
	in := EstimateInput{Dir: dir, Requests: "100,1000", Rules: compare.BuiltinName, Format: "table"}
	err := noUserDirs().Estimate(context.Background(), &w, in, nil)
	if exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), `stage "startup" ends at 1717405204`) || w.Len() != 0 {
		t.Errorf("err %v (exit %d), shown %q; want refused (exit 2) and nothing shown", err, exitcode.Of(err), w.String())
	}
}
