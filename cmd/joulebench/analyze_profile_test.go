package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A missing profile file is named as such, not looked up as a built-in.
func TestAnalyzeMissingProfileFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, arg := range []string{missing, "missing.yaml"} {
		_, errOut, code := runCLI(t, "analyze", smallRun, "--profile", arg)
		if code != exitInvalid || !strings.Contains(errOut, "profile file "+arg+" does not exist") {
			t.Errorf("--profile %s: exit %d, stderr %q; want %d and \"does not exist\"", arg, code, errOut, exitInvalid)
		}
	}
}

// analyze --profile labels its output with the profile it evaluated, not
// the one the run was archived with (run-small ran benchmark-1.5).
func TestAnalyzeLabelsTheProfileUsed(t *testing.T) {
	out, errOut, _ := runCLI(t, "analyze", smallRun, "--profile", "benchmark-1.0")
	if lines := strings.SplitN(out, "\n", 3); len(lines) < 2 || !strings.HasPrefix(lines[1], "profile benchmark-1.0 ") {
		t.Errorf("header does not name benchmark-1.0:\n%s\n%s", out, errOut)
	}
	out, errOut, _ = runCLI(t, "report", smallRun, "--profile", "benchmark-1.0", "--format", "csv")
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "run_id,profile,") || strings.Split(lines[1], ",")[1] != "benchmark-1.0" {
		t.Errorf("report CSV does not label rows benchmark-1.0:\n%s\n%s", out, errOut)
	}
}
