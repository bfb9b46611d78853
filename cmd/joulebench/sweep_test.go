package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/syncbuf"
	"github.com/joulebench/joulebench/workflow"
)

// TestMain lets the test binary be joulebench itself when
// JOULEBENCH_TEST_AS_MAIN=1: sweep runs it as its runs.
func TestMain(m *testing.M) {
	if os.Getenv("JOULEBENCH_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	removeKubeBuild()
	os.Exit(code)
}

const smallCampaign = `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}, {id: sim-llm-70b, params: 70e9}]
  scenario: [{name: chat, dataset: chat}]
args: [--set, request_count=20, --set, baseline=1s, --set, release_hold=1s, --set, window=5]
slurm: {time: "00:10:00", poll: 1s} # no gpus: the simulator asks for none
`

// sweepProc starts `sweep` as its own process (the test binary as
// joulebench).
func sweepProc(t *testing.T, dir string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"sweep", "campaign.yaml", "--joulebench-bin", os.Args[0]}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// syncBuffer is the output of a child process, written by exec's copying
// goroutine while the test reads it.
type syncBuffer = syncbuf.Buffer

// A sweep interrupted in its second run is resumed: the complete first run
// is skipped, the interrupted one runs again in a new directory, and
// compare lists both.
func TestSweepInterruptedResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator three times (~40 s)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(smallCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := sweepProc(t, dir)
	// Wait for the second run to have its archive open, then interrupt
	// the sweep.
	waitSecondRun(t, cmd, out, dir)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted sweep: %v, want exit %d\n%s", err, exitInterrupted, out.String())
	}
	cmd, out = sweepProc(t, dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "skip sim-sim-llm-8b-chat-r1-") || strings.Contains(s, "[2/2]") {
		t.Errorf("resume did not skip the complete run, or ran two:\n%s", s)
	}
	if !strings.Contains(s, ".try2") || !strings.Contains(s, "2 complete runs compared") {
		t.Errorf("interrupted run not re-run into .try2, or compare missing:\n%s", s)
	}
	for _, m := range []string{"sim-llm-8b", "sim-llm-70b"} {
		if !strings.Contains(s, m) {
			t.Errorf("compare lacks %s", m)
		}
	}
}

// A sweep killed with SIGKILL in its second run: a second sweep started
// while it runs refuses (the campaign lock names the holder's PID); the
// run in progress gets SIGTERM from the kernel (Linux parent-death signal)
// and ends interrupted instead of running on unattended; the resumed sweep
// skips the complete run, runs the killed one again into .try2 and
// compares both.
func TestSweepKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator three times (~40 s)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(smallCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := sweepProc(t, dir)
	waitSecondRun(t, cmd, out, dir)
	// The run's PID file (OUT/logs/<attempt>.pid) names the child run.
	var childPID int
	waitUntil(t, cmd, time.Minute, func() bool {
		pids, _ := filepath.Glob(filepath.Join(dir, "out", "logs", "*.pid"))
		if len(pids) == 1 {
			b, _ := os.ReadFile(pids[0])
			childPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return childPID != 0
	}, func() string { return "no pid file of the second run" })
	// A second sweep of the campaign refuses while the first one runs.
	second, secondOut := sweepProc(t, dir)
	err := second.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure ||
		!strings.Contains(secondOut.String(), "locked by another sweep (pid "+strconv.Itoa(cmd.Process.Pid)+" holds") {
		_ = cmd.Process.Kill()
		t.Fatalf("second sweep: %v, want exit %d naming pid %d:\n%s", err, exitFailure, cmd.Process.Pid, secondOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The child run ends (it got SIGTERM). A process that is gone, or a
	// zombie nobody reaped yet, has no command line.
	waitUntil(t, nil, 2*time.Minute, func() bool { return !procRuns(childPID) }, func() string {
		_ = syscall.Kill(childPID, syscall.SIGKILL)
		return "run " + strconv.Itoa(childPID) + " still going after its sweep was killed"
	})
	killed, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "sim-sim-llm-70b-*"))
	if len(killed) != 1 {
		t.Fatalf("archives of the killed run: %v", killed)
	}
	if m, err := archive.ReadMeta(filepath.Join(killed[0], archive.RunFile)); err != nil || m.Status != record.StatusInterrupted {
		t.Errorf("killed run's status %q (%v), want %s: the run did not get SIGTERM", m.Status, err, record.StatusInterrupted)
	}
	cmd, out = sweepProc(t, dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "skip sim-sim-llm-8b-chat-r1-") || strings.Contains(s, "[2/2]") {
		t.Errorf("resume did not skip the complete run, or ran two:\n%s", s)
	}
	if !strings.Contains(s, ".try2") || !strings.Contains(s, "2 complete runs compared") {
		t.Errorf("killed run not re-run into .try2, or compare missing:\n%s", s)
	}
}

// waitSecondRun waits until the sweep's second run has its archive open
// (run.json written, status running, and profile.yaml beside it): the run
// process is past its start, its signal handling in place, so that an
// interruption or its sweep's death ends it as interrupted.
func waitSecondRun(t *testing.T, cmd *exec.Cmd, out *syncBuffer, dir string) {
	t.Helper()
	waitUntil(t, cmd, 2*time.Minute, func() bool {
		if !strings.Contains(out.String(), "[2/2]") {
			return false
		}
		got, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "sim-sim-llm-70b-*", workflow.ProfileFile))
		return len(got) == 1
	}, func() string { return "second run never opened its archive:\n" + out.String() })
}

// waitUntil polls cond until it holds; past limit it kills cmd (when set)
// and fails with what. The test waits on what the child did (a line of its
// output, a file it wrote, its exit), never for a fixed time.
func waitUntil(t *testing.T, cmd *exec.Cmd, limit time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			if cmd != nil {
				_ = cmd.Process.Kill()
			}
			t.Fatal(what())
		case <-tick.C:
		}
	}
}

// procRuns reports whether process pid exists and is not a zombie (Linux:
// a zombie's /proc/PID/cmdline is empty).
func procRuns(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && len(b) > 0
}

// With JOULEBENCH_SLURM=1 (CI starts a one-node cluster with
// .ci/start-slurm.sh) the same campaign runs as Slurm jobs.
func TestSweepSlurm(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		if os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
			t.Fatal("JOULEBENCH_SLURM is not 1: .ci/start-slurm.sh did not start the cluster")
		}
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(smallCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--executor", "slurm", "--joulebench-bin", os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("slurm sweep: %v\n%s", err, b)
	}
	s := string(b)
	if !strings.Contains(s, "2 complete runs compared") || !strings.Contains(s, "sim-llm-70b") {
		t.Errorf("slurm sweep output:\n%s", s)
	}
}

// A Slurm sweep killed with SIGKILL after submitting leaves its jobs to
// Slurm; the restarted sweep submits nothing again, re-attaches to the
// jobs still queued or running (or skips those complete by then) and
// compares both runs.
func TestSweepSlurmKilledReattaches(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		if os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
			t.Fatal("JOULEBENCH_SLURM is not 1: .ci/start-slurm.sh did not start the cluster")
		}
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(smallCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := sweepProc(t, dir, "--executor", "slurm")
	waitUntil(t, cmd, 2*time.Minute, func() bool { return strings.Count(out.String(), "submitted ") >= 2 },
		func() string { return "jobs never submitted:\n" + out.String() })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	again := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--executor", "slurm", "--joulebench-bin", os.Args[0])
	again.Dir = dir
	again.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("restarted slurm sweep: %v\n%s", err, b)
	}
	s := string(b)
	if strings.Contains(s, "submitted ") {
		t.Errorf("restarted sweep submitted again:\n%s", s)
	}
	if n := strings.Count(s, "re-attach ") + strings.Count(s, "skip "); n != 2 {
		t.Errorf("%d runs re-attached or skipped, want 2:\n%s", n, s)
	}
	if !strings.Contains(s, "2 complete runs compared") {
		t.Errorf("compare missing:\n%s", s)
	}
}
