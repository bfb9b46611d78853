//go:build unix

package gpusettings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// within runs f and fails the test when it has not returned in d (a read
// that blocks for ever).
func within(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
		return nil
	}
}

// A journal that is a FIFO (no writer) is refused at once, naming it, by
// the run's check and by restore; before, opening it blocked for ever.
func TestJournalFIFORefused(t *testing.T) {
	dir := t.TempDir()
	js := Journals{Dirs: []string{dir}}
	path := filepath.Join(dir, JournalPrefix+"GPU-1"+JournalSuffix)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := within(t, 3*time.Second, func() error { return js.Check() })
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO journal: %v", err)
	}
	_, err = within2(t, func() (string, error) { return RestoreJournals(newFake(1), js) })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("restore of a FIFO journal: %v", err)
	}
}

// A journal that is a symbolic link (here to /dev/zero, which would be
// read without end) is refused without being followed; a regular file
// over the size cap is refused without being read whole.
func TestJournalSymlinkAndSizeRefused(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, JournalFile)
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	err := within(t, 3*time.Second, func() error { _, err := ReadJournal(link); return err })
	if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlinked journal: %v", err)
	}
	big := filepath.Join(t.TempDir(), JournalFile)
	if err := os.WriteFile(big, make([]byte, maxJournalBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ReadJournal(big)
	if err == nil || !strings.Contains(err.Error(), big) || !errors.Is(err, boundedfile.ErrTooLarge) {
		t.Errorf("journal over the cap: %v", err)
	}
}

func within2(t *testing.T, f func() (string, error)) (string, error) {
	t.Helper()
	var s string
	err := within(t, 3*time.Second, func() error { var err error; s, err = f(); return err })
	return s, err
}
