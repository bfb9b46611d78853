package main

import (
	"bytes"
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
// state and closes release, as on an idle machine. A benchmark, run alone
// (it loads the host on purpose, so it stays out of `go test ./...`):
//
//	go test -run '^$' -bench DefaultSimUnderHostLoad -benchtime 1x ./cmd/joulebench
func BenchmarkDefaultSimUnderHostLoad(b *testing.B) {
	for range b.N {
		runDefaultSimUnderHostLoad(b)
	}
}

func runDefaultSimUnderHostLoad(t testing.TB) {
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
	var out, errOut bytes.Buffer
	if err := newApp(&out, &errOut).execute(context.Background(), []string{"run", "benchmark-1.5", "--out", dir, "--no-progress"}); err != nil {
		t.Fatalf("run under load: exit %d: %v\n%s\n%s", exitCode(err), err, out.String(), errOut.String())
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
	if b, ok := t.(*testing.B); ok {
		if v, ok := run.Results.Values["steady_state_j_per_token"].Value.(float64); ok {
			b.ReportMetric(v, "J/token")
		}
	}
}
