package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/openai"
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

// fill writes to path until the disk is full.
func fill(t *testing.T, path string) {
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
	for {
		if _, err := f.Write(b); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// A disk that fills up during the formal stage: the error names the disk
// (the run directory, its mount and free space) rather than blaming the
// power source, and the run's final status still reaches run.json on the
// full disk through the room the archive held back for it. Before, the
// reason was "power source failed: telemetry sim: write samples: archive:
// write requests.jsonl: no space left on device" and the status stayed
// running.
func TestDiskFullDuringFormal(t *testing.T) {
	disk := smallDisk(t, "4m")
	w, err := archive.Create(filepath.Join(disk, "run"), record.Meta{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	rc := &workflow.RunContext{Clock: workflow.NewClock(), Out: w, Log: zerolog.Nop()}
	// The disk fills up once the formal stage has begun.
	var once sync.Once
	cl := &testClient{clock: rc.Clock.Now, tokens: 5, onDo: func(openai.Request) bool {
		once.Do(func() { fill(t, filepath.Join(disk, "filler")) })
		return true
	}}
	d := &Deps{Engine: newTestEngine("http://x"), Client: cl, Model: "m", Chat: true, External: true}
	cfg := formalConfig()
	cfg.Count = 3000 // more than the archive's 64 KiB buffer of request lines
	runErr := runRequests(context.Background(), rc, d, cfg)
	if runErr == nil {
		t.Fatal("formal requests on a full disk: no error")
	}
	msg := runErr.Error()
	for _, want := range []string{"disk full: the run directory " + filepath.Join(disk, "run") + " is on " + disk + " (tmpfs, tmpfs)", " free of ", "no space left on device"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "power source") {
		t.Errorf("error %q blames the power source", msg)
	}
	// What the run command does after a failed step: the status is
	// written, on the full disk.
	if err := Finish(context.Background(), rc, record.StatusFailed, msg); err != nil {
		t.Logf("finish: %v (the data buffered past the full disk is lost)", err)
	}
	m, err := archive.ReadMeta(filepath.Join(disk, "run", archive.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != record.StatusFailed || !strings.Contains(m.Reason, "disk full") {
		t.Errorf("run.json on disk: status %q reason %q, want failed, disk full", m.Status, m.Reason)
	}
	_ = w.Close() // the buffered data past the full disk fails
	if _, err := os.Stat(filepath.Join(disk, "run", archive.StatusReserveFile)); !os.IsNotExist(err) {
		t.Errorf("status reserve left after Close: %v", err)
	}
}

// A sampler that dies writing its samples reports the disk, not the power
// source.
func TestTelemetryErrNamesTheDisk(t *testing.T) {
	rc := newRC(t)
	d := &Deps{run: runState{deadErr: errors.Join(errors.New("telemetry test: write samples"), archiveErr(rc, syscall.ENOSPC))}}
	err := d.TelemetryErr()
	if err == nil || !strings.HasPrefix(err.Error(), "disk full: the run directory "+rc.Out.Dir()) {
		t.Errorf("TelemetryErr = %v, want the disk named", err)
	}
	d = &Deps{run: runState{deadErr: errors.New("nvml: gpu lost")}}
	if err := d.TelemetryErr(); err == nil || !strings.HasPrefix(err.Error(), "power source failed: nvml: gpu lost") {
		t.Errorf("TelemetryErr = %v, want the power source", err)
	}
}
