package compare

import (
	"path/filepath"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// writeWinnerRun archives r (its run.json and results.json) under dir.
func writeWinnerRun(t *testing.T, dir string, r Run) string {
	t.Helper()
	w, err := archive.Create(dir, r.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := archive.WriteResultsFile(dir, *r.Results); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The winner of the runs that could be loaded: a failed engine's
// directory (never written) has no row.
func TestAsiaiWinnerOfDirs(t *testing.T) {
	root := t.TempDir()
	dirs := []string{
		writeWinnerRun(t, filepath.Join(root, "ollama"), winnerRun("ollama", 60, 50, 100, false)),
		filepath.Join(root, "vllm-failed"),
		writeWinnerRun(t, filepath.Join(root, "llamacpp"), winnerRun("llamacpp", 80, 40, 120, false)),
	}
	got := AsiaiWinnerOfDirs(dirs)
	if len(got) != 2 || got[0].Engine != "ollama" || got[1].Engine != "llamacpp" {
		t.Fatalf("rows %+v, want ollama and llamacpp", got)
	}
	// llamacpp's 80 tok/s beats ollama's 60.
	if !got[1].Winner || got[0].Winner {
		t.Errorf("winner: ollama %v, llamacpp %v; want llamacpp", got[0].Winner, got[1].Winner)
	}
	if rows := AsiaiWinnerOfDirs([]string{filepath.Join(root, "none")}); len(rows) != 0 {
		t.Errorf("no run loaded: rows %+v", rows)
	}
}
