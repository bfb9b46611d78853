package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

const agentTestToken = "agent-run-token-5d0c7e"

func tokenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.token")
	if err := os.WriteFile(p, []byte(agentTestToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The agent needs an explicit address and a token file; it refuses to
// read other agents.
func TestAgentCommandRefusals(t *testing.T) {
	tf := tokenFile(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--token-file", tf, "--telemetry", "replay", "--replay", smallRun}, "--listen is required"},
		{[]string{"agent", "--listen", "", "--token-file", tf}, "--listen is required"},
		{[]string{"agent", "--listen", "127.0.0.1:0", "--telemetry", "replay", "--replay", smallRun}, "--token-file is required"},
		{[]string{"agent", "--listen", ":7070", "--token-file", tf, "--telemetry", "replay", "--replay", smallRun}, "names no host"},
		{[]string{"agent", "--listen", "127.0.0.1:0", "--token-file", tf, "--telemetry", "agent", "--agent", "http://127.0.0.1:1"}, "an agent serves this node's own source"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != exitInvalid || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", c.args, code, errOut, exitInvalid, c.want)
		}
	}
	open := filepath.Join(t.TempDir(), "open.token")
	if err := os.WriteFile(open, []byte(agentTestToken), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o644)
	_, errOut, code := runCLI(t, "agent", "--listen", "127.0.0.1:0", "--token-file", open, "--telemetry", "replay", "--replay", smallRun)
	if code != exitInvalid || !strings.Contains(errOut, "chmod 600") || strings.Contains(errOut, agentTestToken) {
		t.Errorf("a token file open to others: exit %d, %q", code, errOut)
	}
}

// startAgentCommand runs `joulebench agent` in this process, serving the
// replay of run-small's recording, until the test ends; it returns its
// URL once it answers.
func startAgentCommand(t *testing.T) (url string, logs *bytes.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	logs = &bytes.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- newApp(&out, logs).execute(ctx, []string{"agent", "--listen", addr, "--token-file", tokenFile(t), "--host", "node-a",
			"--telemetry", "replay", "--replay", filepath.Join(smallRun, archive.PowerFile), "--interval", "50ms"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop")
		}
	})
	url = "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/v1/clock")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return url, logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run whose power comes from a joulebench agent (this process, serving
// a replay: the simulated engine's own GPUs exist only inside a run):
// the devices carry the agent's host, run.json records the clock offsets
// at the start and the end, the clock check passes, and the token, given
// through the environment, appears in neither the archive nor the logs.
func TestRunWithAgentTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	url, agentLog := startAgentCommand(t)
	t.Setenv("JOULEBENCH_AGENT_TOKEN", agentTestToken)
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "agent", "--agent", url}, fastSets...)
	out, errOut, code := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	devs := run.Meta.Hardware.Devices
	if len(devs) != 1 || devs[0].ID != "node-a:gpu0" || devs[0].Host != "node-a" {
		t.Errorf("devices %+v", devs)
	}
	cs := run.Meta.Telemetry.ClockSync
	if run.Meta.Telemetry.Source != "agent" || len(cs) != 1 || cs[0].Host != "node-a" || cs[0].EndOffsetS == nil || cs[0].Source != "agent "+url {
		t.Fatalf("telemetry %+v", run.Meta.Telemetry)
	}
	// Same clock on both sides: each offset is 0 within half its round trip.
	if d := cs[0].StartOffsetS; d > cs[0].StartRTTS/2+1e-6 || d < -cs[0].StartRTTS/2-1e-6 {
		t.Errorf("start offset %v s with rtt %v s on one machine's clock", d, cs[0].StartRTTS)
	}
	if r := run.Results.Values["power_clocks_aligned"]; r.Passed == nil || !*r.Passed {
		t.Errorf("power_clocks_aligned %+v", r)
	}
	if len(run.Power) == 0 || run.Meta.Status != record.StatusComplete {
		t.Errorf("status %q, %d samples", run.Meta.Status, len(run.Power))
	}
	for _, f := range []string{archive.RunFile, archive.ResultsFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), agentTestToken) {
			t.Errorf("%s holds the token", f)
		}
	}
	if strings.Contains(out+errOut+agentLog.String(), agentTestToken) {
		t.Error("the output or a log holds the token")
	}
}

// A run pointed at an agent with the wrong token fails before anything
// runs, naming the agent, never echoing the token.
func TestRunWithAgentWrongToken(t *testing.T) {
	url, agentLog := startAgentCommand(t)
	const wrong = "not-the-run-token-31"
	t.Setenv("JOULEBENCH_AGENT_TOKEN", wrong)
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "agent", "--agent", url}, fastSets...)
	out, errOut, code := runCLI(t, args...)
	if code == exitOK || !strings.Contains(errOut, "agent "+url+"/v1/devices refused the token") {
		t.Fatalf("run with a wrong token: exit %d\n%s\n%s", code, out, errOut)
	}
	all := out + errOut + agentLog.String()
	if strings.Contains(all, wrong) || strings.Contains(all, agentTestToken) {
		t.Errorf("a token shows:\n%s", all)
	}
	if b, err := os.ReadFile(filepath.Join(dir, archive.RunFile)); err == nil && (strings.Contains(string(b), wrong) || strings.Contains(string(b), agentTestToken)) {
		t.Error("run.json holds a token")
	}
}
