package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// The node's power for its agent: a dcgm-exporter endpoint served by
	// this test (this node has no GPU), one GPU at 100 W whose energy
	// counter (mJ) follows. Its URL reaches the agent through the job's
	// JOULEBENCH_SECRET_ARGS, as a --dcgm-url with credentials would.
	t0 := time.Now()
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mj := time.Since(t0).Seconds() * 100 * 1000
		fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-slurm-test-0\",modelName=\"NVIDIA H100 80GB HBM3\"} 100\n"+
			"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-slurm-test-0\",modelName=\"NVIDIA H100 80GB HBM3\"} %.0f\n", mj)
	}))
	defer exporter.Close()
	src := `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}]
  scenario: [{name: chat, dataset: chat}]
args: [--set, request_count=20, --set, baseline=1s, --set, release_hold=1s, --set, window=5]
slurm: {time: "00:10:00", poll: 1s, nodes: 1, agent: {port: ` + strconv.Itoa(port) + `, telemetry: dcgm, args: [--dcgm-url, "` + exporter.URL + `/metrics"]}}
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
	// The path over nodes, whatever the run's outcome: the agent started
	// by srun on the node at its name, the run reading it, the token gone
	// and in no output (it is 64 hex digits; the job's output and the
	// run's log hold no such word).
	if !strings.Contains(jobOut, "serving power samples") || !strings.Contains(jobOut, ":"+strconv.Itoa(port)+" telemetry=dcgm") {
		t.Errorf("the agent did not serve on the node's port %d:\n%s", port, jobOut)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d archives, want 1: %v\n%s\njob output:\n%s", len(runs), runs, s, jobOut)
	}
	tokens, _ := filepath.Glob(filepath.Join(dir, "out", "slurm", "*.agent-token"))
	if len(tokens) != 0 {
		t.Errorf("token files left: %v", tokens)
	}
	hex64 := regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	if w := hex64.FindString(jobOut + readGlob(t, filepath.Join(runs[0], "joulebench.log"))); w != "" {
		t.Errorf("a token-like word %s in the job's output or the run's log", w)
	}
	m, merr := archive.ReadMeta(filepath.Join(runs[0], archive.RunFile))
	if merr != nil {
		t.Fatal(merr)
	}
	if m.Telemetry.Source != "agent" || len(m.Telemetry.ClockSync) != 1 {
		t.Errorf("run.json telemetry %+v; want the agent with one clock offset", m.Telemetry)
	}
	if err != nil {
		t.Fatalf("slurm sweep: %v\n%s\njob output:\n%s", err, s, jobOut)
	}
	host, _ := os.Hostname()
	if m.Status != "complete" {
		t.Errorf("run.json: status %s, want complete\n%s\njob output:\n%s", m.Status, s, jobOut)
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

// `sweep --dry-run --executor slurm` of a nodes: 2 campaign prints the
// job over two nodes with one agent launch per node and the run reading
// both, with no cluster at all; a --telemetry in the runs' args is an
// error at its position, and slurm.agent's source is checked as run
// checks --telemetry.
func TestSweepDryRunNodes(t *testing.T) {
	dir := t.TempDir()
	write := func(src string) string {
		p := filepath.Join(dir, "campaign.yaml")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: vllm}], model: [{id: org/m, tp: 8}]}\n"
	out, errOut, code := runCLI(t, "sweep", write(head+"slurm: {nodes: 2, time: \"01:00:00\"}\n"), "--executor", "slurm", "--dry-run", "--joulebench-bin", "/opt/jb")
	if code != 0 || !strings.Contains(out, "#SBATCH --nodes=2\n") || !strings.Contains(out, "#SBATCH --ntasks-per-node=1\n") ||
		strings.Count(out, "srun --nodes=1 --ntasks=1 --nodelist=") != 2 ||
		!strings.Contains(out, `srun --nodes=1 --ntasks=1 --nodelist="$node2" --job-name=joulebench-agent --overlap --gres=gpu:8 /opt/jb agent --listen "$node2:4780" --token-file "$token" --telemetry nvml &`) ||
		!strings.Contains(out, `--telemetry agent --agent "http://$node1:4780" --agent "http://$node2:4780"`) {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "sweep", write(head+"args: [--telemetry, nvml]\nslurm: {nodes: 2}\n"), "--dry-run")
	if code != 2 || !strings.Contains(errOut, "campaign.yaml:5:8: args[0]: --telemetry is the job's to give when slurm.nodes is set") {
		t.Errorf("--telemetry with nodes: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "sweep", write(head+"slurm: {nodes: 2, agent: {telemetry: bogus}}\n"), "--dry-run")
	if code != 2 || !strings.Contains(errOut, `campaign.yaml:5:26: slurm.agent: the agents' source: --telemetry "bogus": valid are`) {
		t.Errorf("agent source: exit %d\n%s", code, errOut)
	}
}
