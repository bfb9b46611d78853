package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes whole or not at all: a failed write leaves nothing,
// not even its temporary file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	if err := WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "table\n"); return err }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "table\n" || fi.Mode().Perm() != 0o644 {
		t.Errorf("written %q (%v), mode %v", b, err, fi.Mode())
	}
	boom := errors.New("boom")
	failed := filepath.Join(dir, "f.txt")
	if err := WriteFile(failed, func(w io.Writer) error { _, _ = io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a failed write left files: %v", entries)
	}
	err = WriteFile(filepath.Join(dir, "no", "such", "dir", "r.txt"), func(io.Writer) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "--out "+filepath.Join(dir, "no", "such", "dir", "r.txt")+": ") {
		t.Errorf("no directory: %v", err)
	}
}
