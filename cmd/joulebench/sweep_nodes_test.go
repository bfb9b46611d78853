package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
)

// hasAgentCommand reports whether this joulebench has `joulebench agent`.
func hasAgentCommand() bool {
	a := newApp(io.Discard, io.Discard)
	cmd, _, err := a.root.Find([]string{"agent"})
	return err == nil && cmd != nil && cmd.Name() == "agent"
}

// A campaign with slurm: {nodes: 1} goes through the path of a job over
// several nodes on the CI's one-node cluster (JOULEBENCH_SLURM=1 after
// .ci/start-slurm.sh): an agent started on the node by srun, the run on
// it reading that agent (--telemetry agent), the agent stopped and the
// token removed when the run ends. The run's archive is complete, its
// power came from the agent (source agent, a clock offset measured at the
// start and the end), and neither the job's output nor the archive holds
// the token.
func TestSweepSlurmNodesAgent(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		if os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
			t.Fatal("JOULEBENCH_SLURM is not 1: .ci/start-slurm.sh did not start the cluster")
		}
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	if !hasAgentCommand() {
		t.Skip("`joulebench agent` does not exist in this build (it comes with the agent telemetry source): the job's agent step has nothing to start")
	}
	// A port free on this node for the agent (the node is this machine).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	src := `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}]
  scenario: [{name: chat, dataset: chat}]
args: [--set, request_count=20, --set, baseline=1s, --set, release_hold=1s, --set, window=5]
slurm: {time: "00:10:00", poll: 1s, nodes: 1, agent: {port: ` + strconv.Itoa(port) + `, telemetry: sim}}
`
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plan first: one node, one agent launch, the run reading it.
	dry := exec.Command(os.Args[0], "sweep", "campaign.yaml", "--executor", "slurm", "--dry-run", "--joulebench-bin", os.Args[0])
	dry.Dir = dir
	dry.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := dry.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "#SBATCH --nodes=1\n") || strings.Count(string(b), " agent --listen \"$node1:"+strconv.Itoa(port)+"\"") != 1 ||
		!strings.Contains(string(b), " --telemetry agent --agent \"http://$node1:"+strconv.Itoa(port)+"\"") {
		t.Fatalf("dry run: %v\n%s", err, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--executor", "slurm", "--joulebench-bin", os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err = cmd.CombinedOutput()
	s := string(b)
	jobOut := readGlob(t, filepath.Join(dir, "out", "slurm", "*.out"))
	if err != nil {
		t.Fatalf("slurm sweep: %v\n%s\njob output:\n%s", err, s, jobOut)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d archives, want 1: %v\n%s", len(runs), runs, s)
	}
	m, err := archive.ReadMeta(filepath.Join(runs[0], archive.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if m.Status != "complete" || m.Telemetry.Source != "agent" || len(m.Telemetry.ClockSync) != 1 {
		t.Errorf("run.json: status %s, telemetry %+v; want complete, from the agent with one clock offset\n%s\njob output:\n%s", m.Status, m.Telemetry, s, jobOut)
	}
	for _, cs := range m.Telemetry.ClockSync {
		if cs.EndRTTS == nil {
			t.Errorf("clock sync %+v: no end offset", cs)
		}
	}
	for _, d := range m.Hardware.Devices {
		if short, _, _ := strings.Cut(host, "."); d.Host == "" || !strings.HasPrefix(d.Host, short) {
			t.Errorf("device %s: host %q, want this node (%s)", d.ID, d.Host, host)
		}
	}
	// The token: gone, and in no output.
	tokens, _ := filepath.Glob(filepath.Join(dir, "out", "slurm", "*.agent-token"))
	if len(tokens) != 0 {
		t.Errorf("token files left: %v", tokens)
	}
	for _, name := range []string{"JOULEBENCH_AGENT_TOKEN=", "Bearer "} {
		if strings.Contains(jobOut, name) || strings.Contains(readGlob(t, filepath.Join(runs[0], "*")), name) {
			t.Errorf("%q in the job's output or the archive", name)
		}
	}
}

// readGlob is the content of the files matching pattern, concatenated.
func readGlob(t *testing.T, pattern string) string {
	t.Helper()
	paths, _ := filepath.Glob(pattern)
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // a directory
		}
		b.Write(data)
	}
	return b.String()
}
