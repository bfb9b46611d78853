package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// plot --out missing-dir/x.png says the folder is missing, before
// evaluating anything, and writes nothing.
func TestPlotOutMissingFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-dir")
	_, errOut, code := runCLI(t, "plot", smallRun, "--out", filepath.Join(missing, "x.png"))
	if code != exitInvalid || !strings.Contains(errOut, "folder "+missing+" does not exist") || strings.Contains(errOut, ".tmp-") {
		t.Errorf("exit %d, %q; want %d naming the folder", code, errOut, exitInvalid)
	}
}
