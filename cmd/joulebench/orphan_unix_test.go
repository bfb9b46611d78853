//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engineScript is an "engine" that writes its pid and never becomes
// ready: one process, as llama-server; with ignoreTerm a shell that
// ignores SIGTERM (and so the Linux parent-death signal), as a wedged
// engine may, with a child.
func engineScript(t *testing.T, dir string, ignoreTerm bool) (bin, pidFile string) {
	t.Helper()
	pidFile = filepath.Join(dir, "engine.pid")
	run := "exec sleep 60"
	if ignoreTerm {
		run = "trap '' TERM\nsleep 60 &\nwait\nwait"
	}
	bin = filepath.Join(dir, "llama-server")
	body := fmt.Sprintf("#!/bin/sh\necho $$ > %s.tmp && mv %s.tmp %s\n%s\n", pidFile, pidFile, pidFile, run)
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, pidFile
}

// startRun starts `joulebench run` (the test binary as joulebench)
// against a managed llama.cpp engine that is the script bin.
func startRun(t *testing.T, dir, runtimeDir, bin string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run", enginesProfile, "--out", filepath.Join(dir, "run-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		"--no-progress", "--telemetry", "none", "--engine", "llamacpp", "--engine-bin", bin, "--model-file", tinyModel(t, dir))
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1", "XDG_RUNTIME_DIR="+runtimeDir)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// waitPid waits (up to 60 s) for the pid file the engine script writes.
func waitPid(t *testing.T, pidFile string, out *syncBuffer) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine never started:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupRuns reports whether a process of group pgid still runs: where
// /proc lists processes, one that is not a zombie (a container's init may
// reap late).
func groupRuns(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// kill -9 of `joulebench run` while its managed engine starts: on Linux
// the engine gets SIGTERM from the kernel and ends. An engine that
// survives (it ignores SIGTERM, or the system has no parent-death signal)
// is named by the next run's preflight, which fails with how to stop it.
func TestKilledRunLeavesNoUnreportedEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs joulebench as child processes")
	}
	runtimeDir := t.TempDir()
	if runtime.GOOS == "linux" {
		t.Run("engine ends", func(t *testing.T) {
			dir := t.TempDir()
			bin, pidFile := engineScript(t, dir, false)
			cmd, out := startRun(t, dir, runtimeDir, bin)
			engine := waitPid(t, pidFile, out)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for groupRuns(engine) {
				if time.Now().After(deadline) {
					t.Fatalf("engine %d still runs 10 s after joulebench was killed", engine)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	t.Run("orphan reported", func(t *testing.T) {
		dir := t.TempDir()
		bin, pidFile := engineScript(t, dir, true)
		cmd, out := startRun(t, dir, runtimeDir, bin)
		engine := waitPid(t, pidFile, out)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if !groupRuns(engine) {
			t.Fatalf("engine %d ended although it ignores SIGTERM", engine)
		}
		next, nextOut := startRun(t, dir, runtimeDir, bin)
		err := next.Wait()
		want := fmt.Sprintf("a leftover engine llama-server (pid %d, process group %d)", engine, engine)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure || !strings.Contains(nextOut.String(), want) ||
			!strings.Contains(nextOut.String(), fmt.Sprintf("kill -TERM -- -%d", engine)) {
			t.Fatalf("next run: %v, want exit %d naming %q:\n%s", err, exitFailure, want, nextOut.String())
		}
	})
}
