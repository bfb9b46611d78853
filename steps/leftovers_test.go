//go:build unix

package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/engines/process"
)

// startNamed runs `sleep 60` under another name (a copy of the program),
// with extra environment, and stops it at the end of the test.
func startNamed(t *testing.T, name string, env ...string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// script writes an executable shell script.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// The processes check looks beyond the engine's port: another inference
// server (by the process names the engines' descriptors give), running
// containers (docker/podman when installed) and an engine a killed
// joulebench left running (from its pid file). It says what it found;
// servers and containers fail the preflight only with leftovers: fail, a
// leftover engine always.
func TestPreflightLeftovers(t *testing.T) {
	server := startNamed(t, "jbtest-server")
	docker := script(t, "docker", `echo "1a2b3c4d5e6f vllm/vllm-openai:v0.9 (old-vllm)"`)
	noDaemon := script(t, "podman", `echo "cannot connect" >&2; exit 125`)
	emptyTool := script(t, "docker", `exit 0`)

	// A pid file of an engine whose joulebench is gone, still running.
	tag := "t-orphan"
	orphan := startNamed(t, "jbtest-orphan", process.TagEnv+"="+tag)
	pidDir := t.TempDir()
	writeOrphanPidFile(t, pidDir, orphan.Process.Pid, tag)

	cfg := func(leftovers string) *PreflightConfig {
		return &PreflightConfig{Check: []string{"processes"}, Leftovers: leftovers}
	}
	serverFound := fmt.Sprintf("inference server jbtest-server (pid %d)", server.Process.Pid)
	containerFound := "container docker: 1a2b3c4d5e6f vllm/vllm-openai:v0.9 (old-vllm)"
	cases := []struct {
		name    string
		d       *Deps
		c       *PreflightConfig
		wantErr []string // empty: passes
		wantLog []string
		notLog  []string
	}{
		{"warn", &Deps{ServerNames: []string{"jbtest-server"}, ContainerTools: []string{docker, noDaemon}}, cfg("warn"),
			nil, []string{"preflight: found " + serverFound, "preflight: found " + containerFound, "cannot list running containers"}, nil},
		{"fail", &Deps{ServerNames: []string{"jbtest-server"}, ContainerTools: []string{docker}}, cfg("fail"),
			[]string{serverFound, containerFound, "(leftovers: fail)"}, nil, nil},
		// A tool that cannot list its containers is said so; the
		// preflight then never claims that none runs.
		{"fail, nothing found, containers not listed", &Deps{ServerNames: []string{"jbtest-none"}, ContainerTools: []string{noDaemon}}, cfg("fail"),
			nil, []string{"cannot list running containers", "preflight: no other inference server found"}, []string{"running container ("}},
		{"nothing found, one tool lists none", &Deps{ServerNames: []string{"jbtest-none"}, ContainerTools: []string{noDaemon, emptyTool}}, cfg("warn"),
			nil, []string{"cannot list running containers", "preflight: no other inference server or running container (docker) found"}, []string{"(podman"}},
		{"fail, external engine: its server is expected", &Deps{External: true, ServerNames: []string{"jbtest-server"}}, cfg("fail"),
			nil, []string{serverFound}, nil},
		{"leftover engine", &Deps{PidDir: pidDir}, cfg("warn"),
			[]string{fmt.Sprintf("a leftover engine jbtest-orphan (pid %d, process group %d)", orphan.Process.Pid, orphan.Process.Pid), "kill -TERM"}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRC(t)
			var log bytes.Buffer
			rc.Log = zerolog.New(&log)
			err := runPreflight(context.Background(), rc, tc.d, tc.c)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("unexpected: %v", err)
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, log.String())
				}
			}
			for _, w := range tc.notLog {
				if strings.Contains(log.String(), w) {
					t.Errorf("log has %q:\n%s", w, log.String())
				}
			}
		})
	}
}

// writeOrphanPidFile writes the pid file a killed joulebench would have
// left for engine pid.
func writeOrphanPidFile(t *testing.T, dir string, pid int, tag string) {
	t.Helper()
	rec := map[string]any{"pid": pid, "name": "jbtest-orphan", "argv": []string{"jbtest-orphan", "60"}, "url": "http://127.0.0.1:1",
		"tag": tag, "owner_pid": deadPID(t)}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("jbtest-orphan-%d.json", pid)), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
