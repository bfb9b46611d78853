//go:build linux

package campaign

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A second lock of the same campaign fails and names the holder; after
// Unlock it succeeds. flock conflicts between two open file descriptions
// even in one process, so one test process is enough.
func TestLockRefusesSecondSweep(t *testing.T) {
	c := load(t, good)
	l, err := c.Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Lock()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if want := "pid " + strconv.Itoa(os.Getpid()) + " holds"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the holder (%q)", err, want)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := c.Lock()
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
}

// RunLocal and RunSlurm refuse to run while another sweep holds the lock,
// and run nothing.
func TestExecutorsRespectLock(t *testing.T) {
	c := load(t, good)
	l, err := c.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	p := c.Expand()
	if _, err := c.RunLocal(context.Background(), p, Options{Binary: "/nonexistent/joulebench"}); !errors.Is(err, ErrLocked) {
		t.Errorf("RunLocal: %v, want ErrLocked", err)
	}
	called := false
	cmd := func(context.Context, string, ...string) ([]byte, error) { called = true; return nil, nil }
	if _, err := c.RunSlurm(context.Background(), p, Options{Binary: "jb"}, cmd); !errors.Is(err, ErrLocked) || called {
		t.Errorf("RunSlurm: %v (slurm called %v), want ErrLocked and no call", err, called)
	}
}

// A run left going by a killed sweep (its PID file names a live process
// whose arguments include the archive) is waited for; a PID file naming a
// process that runs something else is not.
func TestWaitOrphans(t *testing.T) {
	c := load(t, good)
	p := c.Expand()
	r := p.Runs[0]
	dir := c.attemptDir(r, 1)
	writeMeta(t, dir, "running")
	logs := filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	pidPath := filepath.Join(logs, filepath.Base(dir)+".pid")

	// Another process (this test) under the recorded PID: not waited for.
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if err := c.waitOrphans(context.Background(), p, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("waited for a process that does not run the archive:\n%s", log.String())
	}
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Errorf("stale pid file kept: %v", err)
	}

	// A process with the archive among its arguments, ending in ~1 s.
	orphan := exec.Command("sh", "-c", "sleep 1; true", "sh", dir)
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	go orphan.Wait() // reap it, as init would
	for t0 := time.Now(); !runsArchive(orphan.Process.Pid, dir) && time.Since(t0) < 500*time.Millisecond; {
		time.Sleep(time.Millisecond) // until its arguments show in /proc (a loaded machine)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(orphan.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	log.Reset()
	if err := c.waitOrphans(context.Background(), p, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "waiting for it to end") || !strings.Contains(log.String(), "ended") {
		t.Errorf("log:\n%s", log.String())
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("returned after %s, before the orphan (sleep 1) ended", el)
	}
	if runsArchive(orphan.Process.Pid, dir) {
		t.Error("orphan still runs after waitOrphans returned")
	}

	// A cancelled wait returns ctx's error.
	orphan = exec.Command("sh", "-c", "sleep 30; true", "sh", dir)
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orphan.Process.Kill(); _ = orphan.Wait() }()
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(orphan.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.waitOrphans(ctx, p, Options{Log: &log}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
}
