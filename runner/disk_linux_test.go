package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// smallDisk mounts a tmpfs of size bytes on a temporary directory (root
// only; skipped where it cannot) and unmounts it at the end.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// leaveFree fills the disk of path, then gives back free bytes.
func leaveFree(t *testing.T, path string, free int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	var n int64
	for {
		k, err := f.Write(b)
		n += int64(k)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	if err := f.Truncate(n - free); err != nil {
		t.Fatal(err)
	}
}

// A disk that fills while the profile's copy is written: the run fails at
// once, saying the disk is full, run.json records it (status failed, the
// reason, through the room the archive holds back), and no truncated
// profile.yaml is left. Before, the run went on with status running and
// half a profile.yaml.
func TestDiskFullWritingProfile(t *testing.T) {
	disk := smallDisk(t, "4m")
	// The archive takes its 1 MiB status reserve and a page or two for
	// run.json and power.csv; benchmark-1.5 (43 KB) does not fit in
	// what is left of 1 MiB + 16 KiB.
	leaveFree(t, filepath.Join(disk, "filler"), 1<<20+16<<10)
	r := runForTest(t, true, "request_count=4")
	r.dir = filepath.Join(disk, "run")
	err := r.open(context.Background())
	t.Cleanup(func() { _ = r.close() })
	if err == nil {
		t.Fatal("open on a full disk: no error")
	}
	if !strings.Contains(err.Error(), "disk full: the run directory "+r.dir) || !strings.Contains(err.Error(), "profile.yaml") {
		t.Errorf("error %q, want the full disk and profile.yaml named", err)
	}
	m, rerr := archive.ReadMeta(filepath.Join(r.dir, archive.RunFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if m.Status != record.StatusFailed || !strings.Contains(m.Reason, "disk full") || !strings.Contains(m.Reason, "profile.yaml") {
		t.Errorf("run.json: status %q reason %q, want failed, disk full writing profile.yaml", m.Status, m.Reason)
	}
	if _, serr := os.Stat(filepath.Join(r.dir, workflow.ProfileFile)); !os.IsNotExist(serr) {
		t.Errorf("a truncated profile.yaml is left (stat: %v)", serr)
	}
	ents, _ := os.ReadDir(r.dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file %s left", e.Name())
		}
	}
}
