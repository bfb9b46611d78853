package campaign

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// The sweep command refuses a bad format and an unknown executor before
// it reads the campaign, and a dry run prints the plan and runs nothing
// (no comparison).
func TestSweepCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	compared := false
	cmd := SweepCommand{Path: path, Format: "table", Executors: BuiltinExecutors(), Executor: "local", Binary: "/bin/joulebench",
		DryRun: true, Out: &out, Log: &out,
		Compare: func(context.Context, []string, []compare.NotApplicable) error { compared = true; return nil }}

	bad := cmd
	bad.Format, bad.Path = "xml", filepath.Join(dir, "missing.yaml")
	if err := bad.Run(context.Background()); err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), "xml") {
		t.Errorf("bad format: %v (exit %d)", err, exitcode.Of(err))
	}
	bad = cmd
	bad.Executor, bad.Path = "k8s", filepath.Join(dir, "missing.yaml")
	if err := bad.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "k8s") {
		t.Errorf("unknown executor: %v", err)
	}
	checked := false
	cmd.CheckCompare = func() error { checked = true; return nil }
	if err := cmd.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// good: 2 engines × 2 models − 1 excluded = 3 combinations × 2
	// repetitions × 2 warmup_requests values = 12 runs.
	if !checked || compared || !strings.Contains(out.String(), "/bin/joulebench") || strings.Count(out.String(), "--set warmup_requests=") != 12 {
		t.Errorf("dry run (checked %v, compared %v):\n%s", checked, compared, out.String())
	}
}
