package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be joulebench itself when
// JOULEBENCH_TEST_AS_MAIN=1: sweep runs it as its runs.
func TestMain(m *testing.M) {
	if os.Getenv("JOULEBENCH_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const smallCampaign = `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}, {id: sim-llm-70b, params: 70e9}]
  scenario: [{name: chat, dataset: chat}]
args: [--set, request_count=20, --set, baseline=1s, --set, release_hold=1s, --set, window=5]
slurm: {gpus: false, time: "00:10:00", poll: 1s}
`

// sweepProc starts `sweep` as its own process (the test binary as
// joulebench).
func sweepProc(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"sweep", "campaign.yaml", "--joulebench-bin", os.Args[0]}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

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
	// Wait for the second run to start, then interrupt the sweep.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), "[2/2]") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("second run never started:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
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
