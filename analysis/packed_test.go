package analysis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyze reads the token times packed (issue 46); a profile whose
// formula reads token_times gets them as archived. The sample run's nine
// requests hold 50 token times (counted from requests.jsonl by hand: 3 a
// request, 2 for f3 … as listed there).
func TestProfileReadingTokenTimesSeesThem(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sampleRunOK, "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "metrics:\n",
		"metrics:\n  - {name: chunks_seen, unit: chunks, expr: \"sum(map(requests, len(.token_times)))\"}\n", 1)
	path := filepath.Join(t.TempDir(), "reads-times.yaml")
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := noUserDirs().Evaluate(context.Background(), sampleRunOK, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := e.Results.Values["chunks_seen"]
	if !ok {
		t.Fatalf("no chunks_seen: %v", e.EvalErr)
	}
	if v, ok := r.Value.(int64); !ok || v != 50 {
		if f, ok := r.Value.(float64); !ok || f != 50 {
			t.Errorf("chunks_seen = %v (%T, %s), want 50", r.Value, r.Value, r.Note)
		}
	}
}

// The built-in profiles read no token_times field (a check named
// first_token_times_exact is not one), so analyze keeps the times packed.
func TestBuiltinProfilesKeepTokenTimesPacked(t *testing.T) {
	for _, name := range []string{"benchmark-1.0", "benchmark-1.5"} {
		l, _, err := noUserDirs().ReadLoad(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l.Program.ReadsTokenTimes() {
			t.Errorf("%s reads token_times: analyze would unpack every request's", name)
		}
	}
}
