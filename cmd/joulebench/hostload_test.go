package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
)

// The default simulated run must not depend on the host's load: beside
// two CPU-bound processes (`yes` into the null device, bounded by a
// timeout and killed by PID when the run ends) it still reaches steady
// state and closes release, as on an idle machine.
func TestRunDefaultSimUnderHostLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for about a minute beside two busy processes")
	}
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes(1) to load the host with")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for range 2 {
		cmd := exec.CommandContext(ctx, yes) // stdout nil: the null device
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, "run", "benchmark-1.5", "--out", dir, "--no-progress")
	if code != exitOK {
		t.Fatalf("run under load: exit %d\n%s\n%s", code, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"steady_state_reached", "release_closed"} {
		if v := run.Results.Values[c]; v.Passed == nil || !*v.Passed {
			t.Errorf("%s under host load: %+v", c, v)
		}
	}
}
