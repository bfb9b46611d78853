package campaign

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An attempt interrupted after its log was opened and before its run made
// its directory left a log of the name the next attempt uses (the same
// run directory): the next attempt appends to it, keeping the earlier
// lines, instead of failing on the existing file (a resumed search hit
// "log: ... file exists").
func TestRunLocalAppendsToAnEarlierLog(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n")
	r := c.Expand().Runs[0]
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := c.NextDir(r)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(c.Dir, "logs", filepath.Base(dir)+".log")
	if err := os.WriteFile(logPath, []byte("the interrupted attempt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /bin/echo stands for joulebench: it prints its arguments and exits.
	if err := c.runLocal(context.Background(), r, Options{Binary: "/bin/echo", Log: io.Discard}); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "the interrupted attempt\n--- joulebench sweep: a new attempt into "+dir) || !strings.Contains(s, "run benchmark-1.5") {
		t.Errorf("log:\n%s", s)
	}
}
