//go:build unix

package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/engines/process/processtest"
)

// parentEnv makes the test binary a stand-in for `joulebench run`: it
// starts the engine its JSON (parentSpec) names, writes the engine's pid
// and then waits to be killed.
const parentEnv = "JOULEBENCH_TEST_ENGINE_PARENT"

type parentSpec struct {
	Argv   []string `json:"argv"`
	PidDir string   `json:"pid_dir"`
	// Out receives the engine's pid once it runs.
	Out string `json:"out"`
}

func maybeRunParent() {
	v := os.Getenv(parentEnv)
	if v == "" {
		return
	}
	var ps parentSpec
	if err := json.Unmarshal([]byte(v), &ps); err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		os.Exit(2)
	}
	os.Unsetenv(parentEnv)
	port, _ := process.FreePort()
	srv := process.NewServer(process.Spec{Name: filepath.Base(ps.Argv[0]), Argv: ps.Argv}, process.LoopbackURL(port), "/health")
	srv.SetTracking(process.Tracking{PidDir: ps.PidDir})
	if err := srv.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		os.Exit(3)
	}
	_ = os.WriteFile(ps.Out+".tmp", []byte(strconv.Itoa(srv.Process().PID())), 0o644)
	_ = os.Rename(ps.Out+".tmp", ps.Out)
	select {} // until killed
}

// startParent starts a stand-in for `joulebench run` that starts argv as
// its engine, and returns it with the engine's pid.
func startParent(t *testing.T, argv []string, pidDir string) (*exec.Cmd, int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "engine.pid")
	b, _ := json.Marshal(parentSpec{Argv: argv, PidDir: pidDir, Out: out})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), parentEnv+"="+string(b))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pid int
	waitFor(t, func() bool {
		b, err := os.ReadFile(out)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return cmd, pid
}

// killParent kills the stand-in with SIGKILL (as kill -9 of joulebench)
// and reaps it.
func killParent(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// kill -9 of joulebench with a managed engine: on Linux the kernel sends
// the engine SIGTERM (parent-death signal), so it does not run on,
// serving, re-parented to init.
func TestEngineEndsWithKilledJoulebench(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's (elsewhere the next run reports the orphan: TestOrphanReported)")
	}
	cmd, engine := startParent(t, []string{"sleep", "60"}, "")
	if !alive(engine) {
		t.Fatal("engine not running")
	}
	killParent(t, cmd)
	waitFor(t, func() bool { return !alive(engine) })
}

// An engine left running by a joulebench killed with SIGKILL (here one
// that ignores the parent-death SIGTERM; on a system without that signal,
// any) is reported by the next run from its pid file, with how to stop
// it; once it is gone the pid file is removed. The pid file of an engine
// whose joulebench still runs is not an orphan.
func TestOrphanReported(t *testing.T) {
	pidDir := t.TempDir()
	// The shell ignores SIGTERM, and so does its sleep (an ignored signal
	// stays ignored across exec).
	cmd, engine := startParent(t, []string{"sh", "-c", "trap '' TERM; sleep 60; :"}, pidDir)
	orphans, err := process.Orphans(pidDir)
	if err != nil || len(orphans) != 0 {
		t.Fatalf("while its joulebench runs: %v %v, want no orphan", orphans, err)
	}
	killParent(t, cmd)
	orphans, err = process.Orphans(pidDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || orphans[0].PID != engine || len(orphans[0].Procs) != 2 {
		t.Fatalf("orphans %+v, want engine %d with its 2 processes (sh, sleep)", orphans, engine)
	}
	msg := orphans[0].String()
	for _, want := range []string{fmt.Sprintf("engine sh (pid %d, process group %d)", engine, engine), "is still running", fmt.Sprintf("kill -TERM -- -%d", engine)} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if err := syscall.Kill(-engine, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !alive(engine) })
	waitFor(t, func() bool {
		o, _ := process.Orphans(pidDir)
		return len(o) == 0
	})
	if files, _ := filepath.Glob(filepath.Join(pidDir, "*")); len(files) != 0 {
		t.Errorf("pid files left: %v", files)
	}
}

// An engine that daemonizes out of its process group (setsid) and keeps
// the port: the stop waits for the port to close and for the escaped
// process to be gone, stopping it too, and only then returns. Before, the
// stop returned once the group was gone, with /health still answering.
func TestStopWaitsForDaemonizedProcess(t *testing.T) {
	dir := t.TempDir()
	escapeFile := filepath.Join(dir, "escaped.pid")
	srv, log := fakeServer(t, processtest.Fake{EscapeFile: escapeFile, Routes: map[string]processtest.Route{"/health": {Body: `{}`}}})
	srv.SetTracking(process.Tracking{Names: []string{filepath.Base(os.Args[0])}, PidDir: filepath.Join(dir, "pids")})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var escaped int
	waitFor(t, func() bool {
		b, err := os.ReadFile(escapeFile)
		escaped, _ = strconv.Atoi(string(b))
		return err == nil && escaped > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	if pgid, _ := syscall.Getpgid(escaped); pgid == srv.Process().PID() {
		t.Fatalf("the escaped process %d is still in the engine's group", escaped)
	}
	if pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.json")); len(pids) != 1 {
		t.Errorf("pid files while running: %v, want 1", pids)
	}
	at, err := srv.Stop(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatalf("stop: %v\n%s", err, log.String())
	}
	if alive(escaped) {
		t.Errorf("the escaped process %d still runs after the stop", escaped)
	}
	host := strings.TrimPrefix(srv.Base, "http://")
	if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the stop", host)
	}
	if at.Before(srv.Process().ExitedAt()) {
		t.Errorf("stop time %v before the leader's exit %v", at, srv.Process().ExitedAt())
	}
	if !strings.Contains(log.String(), "still running outside its process group") {
		t.Errorf("engine.log does not say what outlived the group:\n%s", log.String())
	}
	if pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.json")); len(pids) != 0 {
		t.Errorf("pid files after the stop: %v", pids)
	}
}
