package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/ssebench"
)

// TestFakePartServer is an engine part for TestSweepSlurmNodesParts
// (JOULEBENCH_PART_ADDR set): an OpenAI-compatible streaming server
// (internal/ssebench) at that address until it is signalled, which it
// says on its output (the job's).
func TestFakePartServer(t *testing.T) {
	addr := os.Getenv("JOULEBENCH_PART_ADDR")
	if addr == "" {
		t.Skip("an engine part for TestSweepSlurmNodesParts")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	srv, err := ssebench.Start(context.Background(), addr, ssebench.Config{Gap: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fmt.Printf("fake part: stopped by %v\n", <-sigs)
}

// A campaign with slurm: {nodes: 1} and one engine part goes, on the
// CI's one-node cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh),
// through the whole path: srun starts the agent and the part (an
// OpenAI-compatible stand-in server; there is no simulator server
// command) on the node, the job writes the deployment file, the run
// benchmarks the part through it, reading power from the agent, and its
// archive is complete with the part in run.json's deployment at the
// node's name, its device labelled with the part's role.
func TestSweepSlurmNodesParts(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	if !hasAgentCommand() {
		t.Skip("`joulebench agent` does not exist in this build")
	}
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%N").Output()
	nodes := strings.Fields(string(out))
	if err != nil || len(nodes) != 1 {
		t.Skipf("this test expects the one-node CI cluster; sinfo: %v %q", err, out)
	}
	node := nodes[0]
	free := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	agentPort, partPort := free(), free()
	dir := t.TempDir()
	t0 := time.Now()
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mj := time.Since(t0).Seconds() * 100 * 1000
		fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-slurm-test-0\",modelName=\"NVIDIA H100 80GB HBM3\"} 100\n"+
			"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-slurm-test-0\",modelName=\"NVIDIA H100 80GB HBM3\"} %.0f\n", mj)
	}))
	defer exporter.Close()
	// The part's step inherits the sweep's environment (sbatch, srun):
	// JOULEBENCH_TEST_AS_MAIN emptied, the test binary runs the server.
	src := `name: t
profile: benchmark-1.0
out: out
matrix: {model: [{id: ssebench}]}
args: [--set, baseline=1s, --set, warmup_requests=1, --set, request_count=8, --set, max_tokens=16, --set, ignore_eos=true, --set, accept_unsteady=true]
slurm:
  time: "00:10:00"
  poll: 1s
  gpus: false
  nodes: 1
  agent: {port: ` + strconv.Itoa(agentPort) + `, telemetry: dcgm, args: [--dcgm-url, "` + exporter.URL + `/metrics"]}
  parts:
    - name: server
      role: replica
      node: 1
      port: ` + strconv.Itoa(partPort) + `
      devices: [127.0.0.1/gpu0] # the dcgm source's ID: the exporter's host, the GPU
      env: {JOULEBENCH_TEST_AS_MAIN: "", JOULEBENCH_PART_ADDR: "{node}:` + strconv.Itoa(partPort) + `"}
      command: [` + os.Args[0] + `, "-test.run=^TestFakePartServer$"]
`
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--executor", "slurm", "--joulebench-bin", os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := cmd.CombinedOutput()
	jobOut := readGlob(t, filepath.Join(dir, "out", "slurm", "*.out"))
	runs, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d archives, want 1: %v (sweep: %v)\n%s\njob output:\n%s", len(runs), runs, err, b, jobOut)
	}
	m, merr := archive.ReadMeta(filepath.Join(runs[0], archive.RunFile))
	if merr != nil {
		t.Fatalf("%v\n%s\njob output:\n%s", merr, b, jobOut)
	}
	if err != nil || m.Status != "complete" {
		t.Fatalf("sweep: %v, run status %s\n%s\njob output:\n%s", err, m.Status, b, jobOut)
	}
	if m.Telemetry.Source != "agent" {
		t.Errorf("telemetry %+v, want the agent", m.Telemetry)
	}
	if m.Deployment == nil || len(m.Deployment.Parts) != 1 {
		t.Fatalf("run.json deployment %+v, want the one part", m.Deployment)
	}
	p := m.Deployment.Parts[0]
	if p.Name != "server" || p.Role != "replica" || p.Host != node || !strings.Contains(p.URL, node+":"+strconv.Itoa(partPort)) {
		t.Errorf("part %+v, want server (replica) on %s:%d", p, node, partPort)
	}
	labelled := false
	for _, d := range m.Hardware.Devices {
		labelled = labelled || (d.ID == node+":127.0.0.1/gpu0" && d.Role == "replica")
	}
	if !labelled {
		t.Errorf("devices %+v: want %s:127.0.0.1/gpu0 the part's (replica)", m.Hardware.Devices, node)
	}
	// The job stopped the part as an engine is stopped, with SIGTERM
	// (scancel --signal=TERM to its step): killing its srun would have
	// had Slurm kill it, and it would have said nothing.
	if !strings.Contains(jobOut, "fake part: stopped by terminated\n") {
		t.Errorf("the part was not stopped by SIGTERM; job output:\n%s", jobOut)
	}
}
