//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// A run whose terminal hangs up (SIGHUP), or that gets SIGTERM, stops as
// after Ctrl-C: exit 130, status interrupted, stages ended. Left to the
// default, SIGHUP ended the process at once with exit 129 and run.json
// saying running.
func TestRunStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator as a child process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			cmd := exec.Command(os.Args[0], "run", "benchmark-1.5", "--out", dir, "--no-progress", "--set", "baseline=1s",
				"--set", "release_hold=1s", "--set", "sample_interval=100ms", "--set", "request_count=400", "--set", "warmup_requests=2")
			cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			deadline := time.After(60 * time.Second)
			for !stageRecorded(dir, "startup") {
				select {
				case err := <-exited:
					t.Fatalf("run ended before its startup stage: %v\n%s", err, out.String())
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("no startup stage within 60 s\n%s", out.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("run still going 60 s after %v\n%s", sig, out.String())
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
				t.Fatalf("after %v: %v, want exit %d\n%s", sig, err, exitInterrupted, out.String())
			}
			m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != record.StatusInterrupted {
				t.Errorf("status %q (%s), want %s", m.Status, m.Reason, record.StatusInterrupted)
			}
			for _, st := range m.Stages {
				if st.Open {
					t.Errorf("stage %s left open", st.Name)
				}
			}
		})
	}
}
