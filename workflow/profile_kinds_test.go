package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// A profile named by path (LoadFile, ReadProfile, extends: through
// DefaultLookup) is read only when it is a regular file within the cap:
// a device, a symbolic link to one, a FIFO, a directory or a huge sparse
// file is refused by kind or size without being read.
func TestProfileFileKinds(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix files")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(boundedfile.MaxProfileBytes + 1); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	child := filepath.Join(dir, "child.yaml")
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"/dev/zero", "/dev/zero", boundedfile.ErrNotRegular},
		{"symlink to /dev/zero", link, boundedfile.ErrNotRegular},
		{"FIFO", fifo, boundedfile.ErrNotRegular},
		{"directory", dir, boundedfile.ErrNotRegular},
		{"one byte over the cap", huge, boundedfile.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadFile(tc.path, Options{}); !errors.Is(err, tc.want) {
				t.Errorf("LoadFile: %v, want %v", err, tc.want)
			}
			if tc.path != dir { // ReadProfile takes a directory for a name
				if _, _, err := ReadProfile(tc.path); !errors.Is(err, tc.want) {
					t.Errorf("ReadProfile: %v, want %v", err, tc.want)
				}
			}
			if _, _, err := DefaultLookup(tc.path, child); !errors.Is(err, tc.want) {
				t.Errorf("extends: %v, want %v", err, tc.want)
			}
		})
	}
}
