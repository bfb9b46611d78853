package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry/agent"
)

const twoNodes = `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: vllm}]
  model: [{id: org/m, tp: 4}]
slurm: {nodes: 2, time: "01:00:00"}
`

// A campaign with slurm.nodes: 2 plans one job over two nodes, a task
// per node: an agent launched on each node (its name from the job's
// node list) with the per-run token and the nodes' source, and the run on
// the first node reading both agents.
func TestJobScriptNodes(t *testing.T) {
	c := load(t, twoNodes)
	r := c.Expand().Runs[0]
	s := c.JobScript(r, "/opt/jb", "/shared/out/runs/x")
	token := filepath.Join(c.Dir, "slurm", "x.agent-token")
	for _, want := range []string{
		"#!/bin/bash\n",
		"\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n",
		"\n#SBATCH --gres=gpu:4\n", // per node: vLLM needs GPUs on both
		"\nset -- $(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n",
		"\nnode1=${1}\nnode2=${2}\n",
		"\ntoken=" + token + "\n",
		"\n(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \\n' >\"$token\") || exit 1\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node1\" --job-name=joulebench-agent --overlap --gres=gpu:4 /opt/jb agent --listen \"$node1:4780\" --token-file \"$token\" --telemetry nvml &\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node2\" --job-name=joulebench-agent --overlap --gres=gpu:4 /opt/jb agent --listen \"$node2:4780\" --token-file \"$token\" --telemetry nvml &\n",
		"\nwait_agent \"$node1\" \"$agent1\" || exit 1\nwait_agent \"$node2\" \"$agent2\" || exit 1\n",
		"\nJOULEBENCH_AGENT_TOKEN=\"$(cat \"$token\")\" /opt/jb run --spec " + c.SpecFile("/shared/out/runs/x") + " --out /shared/out/runs/x --no-progress" +
			" --telemetry agent --agent \"http://$node1:4780\" --agent \"http://$node2:4780\"\nexit $?\n",
		"\ntrap stop_agents EXIT\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\nsrun "); n != 2 {
		t.Errorf("%d srun launches, want one per node (2):\n%s", n, s)
	}
	if strings.Contains(s, "\nexec ") || strings.Contains(s, "#SBATCH --nodes=1\n") {
		t.Errorf("a job over nodes execs the run or asks for one node:\n%s", s)
	}
	// The port, the source and its flags as slurm.agent says; a simulator
	// run asks for no gres, its agents neither. Secrets reach the command
	// they are for through its environment: the agents' --dcgm-url (the
	// sweep's JOULEBENCH_SECRET_ARGS, put back by joulebench's main), the
	// run's --api-key; none is exported to the whole job.
	c = load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nargs: [--api-key, sk-run-secret]\n"+
		"slurm: {nodes: 3, agent: {port: 9100, telemetry: dcgm, args: [--dcgm-url, 'http://u:pw-agent@$x:9400/metrics']}}\n")
	s = c.JobScript(c.Expand().Runs[0], "/opt/jb", "/d/x")
	if !strings.Contains(s, "\nJOULEBENCH_SECRET_ARGS='[\"--dcgm-url=http://u:pw-agent@$x:9400/metrics\"]' srun --nodes=1 --ntasks=1 --nodelist=\"$node3\" --job-name=joulebench-agent --overlap /opt/jb agent --listen \"$node3:9100\" --token-file \"$token\" --telemetry dcgm &\n") ||
		!strings.Contains(s, "\nJOULEBENCH_API_KEY=sk-run-secret JOULEBENCH_AGENT_TOKEN=\"$(cat \"$token\")\" /opt/jb run ") ||
		!strings.Contains(s, " --agent \"http://$node3:9100\"\n") || strings.Contains(s, "--gres") || strings.Count(s, "\nsrun ")+strings.Count(s, "' srun ") != 3 ||
		strings.Contains(s, "export ") || strings.Count(s, "sk-run-secret") != 1 {
		t.Errorf("script:\n%s", s)
	}
	var dry strings.Builder
	if err := c.DryRun(&dry, c.Expand(), "/opt/jb", "slurm", redact.New()); err != nil {
		t.Fatal(err)
	}
	if d := dry.String(); strings.Contains(d, "pw-agent") || strings.Contains(d, "sk-run-secret") || !strings.Contains(d, "--telemetry dcgm &") {
		t.Errorf("dry run shows a secret:\n%s", d)
	}
	// Without slurm.nodes: the job on one node, exec'ing the run, as before.
	c = load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n")
	s = c.JobScript(c.Expand().Runs[0], "/opt/jb", "/d/x")
	if !strings.HasPrefix(s, "#!/bin/sh\n") || !strings.Contains(s, "#SBATCH --nodes=1\n") || strings.Contains(s, "ntasks") ||
		strings.Contains(s, "agent") || !strings.Contains(s, "\nexec /opt/jb run --spec "+c.SpecFile("/d/x")+" --out /d/x --no-progress\n") {
		t.Errorf("single-node script:\n%s", s)
	}
}

// sweep --dry-run of a nodes: 2 campaign shows the job over two nodes and
// one launch per node.
func TestDryRunNodes(t *testing.T) {
	c := load(t, twoNodes)
	var b strings.Builder
	if err := c.DryRun(&b, c.Expand(), "/bin/jb", "slurm", redact.New()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.Contains(s, "       #SBATCH --nodes=2\n") || strings.Count(s, "       srun --nodes=1 --ntasks=1 --nodelist=") != 2 ||
		!strings.Contains(s, "--telemetry agent --agent \"http://$node1:4780\" --agent \"http://$node2:4780\"") {
		t.Errorf("dry run:\n%s", s)
	}
}

func TestLoadNodesErrors(t *testing.T) {
	const head = "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"zero", head + "slurm: {nodes: 0}\n", "c.yaml:5:16: slurm.nodes: must be from 1 to 1024 (the nodes of each run's job), got 0"},
		{"negative", head + "slurm: {nodes: -2}\n", "c.yaml:5:16: slurm.nodes: must be from 1 to 1024"},
		{"too many", head + "slurm:\n  nodes: 1025\n", "c.yaml:6:10: slurm.nodes: must be from 1 to 1024 (the nodes of each run's job), got 1025"},
		{"not an integer", head + "slurm: {nodes: 2.5}\n", `c.yaml:5:16: slurm.nodes: expected a whole number of nodes, got "2.5"`},
		{"a word", head + "slurm: {nodes: two}\n", "c.yaml:5:16:"},
		{"agent without nodes", head + "slurm: {agent: {port: 9000}}\n", "c.yaml:5:16: slurm.agent: the agents run in a job over several nodes only: set slurm.nodes"},
		{"port", head + "slurm: {nodes: 2, agent: {port: 70000}}\n", "c.yaml:5:33: slurm.agent.port: expected a TCP port from 1 to 65535, got 70000"},
		{"agent source in its args", head + "slurm: {nodes: 2, agent: {args: [--nvml-x, '1', --telemetry=dcgm]}}\n", "c.yaml:5:49: slurm.agent.args[2]: the agents' source is slurm.agent.telemetry: set it there"},
		{"agent reading agents", head + "slurm: {nodes: 2, agent: {telemetry: agent}}\n", "c.yaml:5:38: slurm.agent.telemetry: an agent reads its own node's power"},
		{"run names its source", head + "args: [--set, a=1, --telemetry=nvml]\nslurm: {nodes: 2}\n", "c.yaml:5:20: args[2]: --telemetry is the job's to give when slurm.nodes is set"},
		{"the run's token file", head + "args: [--agent-token-file, t]\nslurm: {nodes: 2}\n", "c.yaml:5:8: args[0]: --agent-token-file is the job's to give"},
		{"a value's run names agents", "name: t\nprofile: p\nout: o\nmatrix:\n  engine: [{kind: sim, args: [--agent, http://x:1]}]\nslurm: {nodes: 1}\n",
			"c.yaml:5:31: matrix.engine[0].args[0]: --agent is the job's to give"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.src), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// The agents' source and its flags are checked as the run command
	// checks --telemetry and the sources' flags.
	var got []string
	ld := Loader{CheckArgs: func(args []string) error {
		got = append(got, strings.Join(args, " "))
		if strings.Contains(strings.Join(args, " "), "bogus") {
			return errors.New(`--telemetry "bogus": valid are nvml, dcgm`)
		}
		return nil
	}}
	if _, err := ld.Load([]byte(head+"slurm: {nodes: 2, agent: {args: [--nvml-index, '0']}}\n"), "c.yaml"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "--telemetry nvml --nvml-index 0" {
		t.Errorf("checked %q, want the default source with its flags", got)
	}
	_, err := ld.Load([]byte(head+"slurm: {nodes: 2, agent: {telemetry: bogus}}\n"), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), `c.yaml:5:26: slurm.agent: the agents' source: --telemetry "bogus": valid are nvml, dcgm`) {
		t.Errorf("error %v", err)
	}
}

// A job over more nodes than the cluster has is refused before anything
// is submitted (Slurm would keep it pending), counting the nodes of the
// partition the job goes to.
func TestSlurmNodesCheckedAgainstCluster(t *testing.T) {
	// sinfo -N lists a node once per partition; * marks the default.
	const sinfo = "n1|debug*\nn1|gpu\nn2|gpu\n"
	for _, tc := range []struct {
		name, slurm, want string
		sinfoArgs         string
	}{
		{"default partition", "{nodes: 2, gpus: false}", "slurm.nodes: 2 cannot be scheduled: the cluster has 1 node in the default partition debug; nothing was submitted", "-h -N -o %N|%P"},
		{"named partition", "{nodes: 3, gpus: false, partition: gpu}", "slurm.nodes: 3 cannot be scheduled: the cluster has 2 nodes in partition gpu; nothing was submitted", "-h -N -o %N|%P -p gpu"},
		{"enough", "{nodes: 2, gpus: false, partition: gpu}", "", "-h -N -o %N|%P -p gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nslurm: "+tc.slurm+"\n")
			f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
			f.onSqueue = func(f *fakeSlurm) {
				for id := range f.queue {
					f.queue[id] = "COMPLETED"
				}
			}
			var sinfoArgs string
			run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
				switch name {
				case "sinfo":
					sinfoArgs = strings.Join(args, " ")
					return []byte(sinfo), nil
				case "scontrol":
					return nil, errors.New("no job record")
				}
				return f.run(ctx, name, args...)
			}
			_, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb"}, run)
			if sinfoArgs != tc.sinfoArgs {
				t.Errorf("sinfo %s, want %s", sinfoArgs, tc.sinfoArgs)
			}
			submitted := f.next > 0
			if tc.want == "" {
				if err != nil || !submitted {
					t.Errorf("error %v, submitted %v; want the job submitted", err, submitted)
				}
				return
			}
			if err == nil || err.Error() != tc.want || exitcode.Of(err) != int(exitcode.Invalid) || submitted {
				t.Errorf("error %v (exit %d), submitted %v; want %q, exit 2, nothing submitted", err, exitcode.Of(err), submitted, tc.want)
			}
		})
	}
}

// The job script over two nodes, run by bash with srun and scontrol
// standing in for Slurm's (a step runs its command here) and this test
// binary for joulebench: each agent listens at its node's address
// (127.0.0.1 and 127.0.0.2) with the token from the token file, the run
// starts once both listen, reads each with the token from its
// environment, the job exits with the run's status, and the agents are
// stopped and the token removed, also when the job is cancelled.
func TestJobScriptNodesRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 is not a local address here: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, tc := range []struct {
		name     string
		runExit  string // the fake run's exit status, or "wait": until SIGTERM
		wantExit int
	}{
		{"complete", "0", 0},
		{"failed run", "3", 3},
		{"cancelled", "wait", 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			log := filepath.Join(dir, "log")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(name, body string) {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeSlurmStandIns(t, bin)
			write("jb", fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestFakeJoulebench$' -- \"$@\"\n", shellQuote(os.Args[0])))
			c := load(t, fmt.Sprintf("name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nslurm: {nodes: 2, agent: {port: %d, telemetry: sim}}\n", port))
			out := filepath.Join(dir, "runs", "x")
			script := filepath.Join(dir, "job.sh")
			if err := os.WriteFile(script, []byte(c.JobScript(c.Expand().Runs[0], filepath.Join(bin, "jb"), out)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(c.Dir, "slurm"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "SLURM_JOB_NODELIST=n[1-2]", "FAKE_STEPS="+filepath.Join(dir, "steps"),
				"FAKE_JB=1", "FAKE_JB_LOG="+log, "FAKE_JB_RUN_EXIT="+tc.runExit)
			var stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the job's processes, as Slurm signals them
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.runExit == "wait" {
				deadline := time.Now().Add(30 * time.Second)
				for !strings.Contains(readFile(log), "run started\n") {
					if time.Now().After(deadline) {
						t.Fatalf("the run never started:\n%s\n%s", readFile(log), stderr.String())
					}
					time.Sleep(50 * time.Millisecond)
				}
				// scancel: SIGTERM to every process of the job.
				if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			l := readFile(log)
			if code != tc.wantExit {
				t.Errorf("job exit %d, want %d\nlog:\n%s\njob:\n%s", code, tc.wantExit, l, stderr.String())
			}
			token := filepath.Join(c.Dir, "slurm", "x.agent-token")
			if _, err := os.Stat(token); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("token file left: %v", err)
			}
			for _, want := range []string{
				fmt.Sprintf("agent 127.0.0.1:%d telemetry sim token 0600 64 hex\n", port),
				fmt.Sprintf("agent 127.0.0.2:%d telemetry sim token 0600 64 hex\n", port),
				fmt.Sprintf("run --out %s telemetry agent agents http://127.0.0.1:%d,http://127.0.0.2:%d read 2\n", out, port, port),
				fmt.Sprintf("agent 127.0.0.1:%d stopped\n", port),
				fmt.Sprintf("agent 127.0.0.2:%d stopped\n", port),
			} {
				if !strings.Contains(l, want) {
					t.Errorf("log lacks %q:\n%s\njob:\n%s", want, l, stderr.String())
				}
			}
			// Each agent's step is stopped through Slurm (scancel
			// --signal=TERM, found by its name), not by killing its srun.
			if n := strings.Count(l, "step joulebench-agent signalled\n"); n != 2 {
				t.Errorf("%d agent steps signalled through Slurm, want 2:\n%s", n, l)
			}
		})
	}
}

// On the CI's one-node cluster (JOULEBENCH_SLURM=1 after
// .ci/start-slurm.sh) a nodes: 2 campaign says the cluster has one node
// and submits nothing: sbatch itself would take the job and leave it
// pending for ever (reason PartitionConfig).
func TestSlurmRealNodesRefused(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%N").Output()
	if err != nil || len(strings.Fields(string(out))) != 1 {
		t.Skipf("this test expects the one-node CI cluster; sinfo: %v %q", err, out)
	}
	dir := t.TempDir()
	src := "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nslurm: {nodes: 2, time: \"00:05:00\", poll: 200ms}\n"
	c, err := Load([]byte(src), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := exec.Command("squeue", "-h", "-o", "%i").Output()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var log strings.Builder
	_, err = c.RunSlurm(ctx, c.Expand(), Options{Binary: "/bin/false", Log: &log}, nil)
	if err == nil || !strings.Contains(err.Error(), "slurm.nodes: 2 cannot be scheduled: the cluster has 1 node in the default partition") ||
		exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("error %v (exit %d), want the one node said\n%s", err, exitcode.Of(err), log.String())
	}
	after, _ := exec.Command("squeue", "-h", "-o", "%i").Output()
	if string(after) != string(before) || strings.Contains(log.String(), "submitted") {
		t.Errorf("a job was submitted: squeue before %q, after %q\n%s", before, after, log.String())
	}
}

// On the CI's cluster (JOULEBENCH_SLURM=1), a job over nodes cancelled
// with scancel from outside: the sweep logs it CANCELLED as it does a job
// on one node, the agent started by srun stops, and the job's script
// removes the token on its way out. joulebench is this test binary
// (TestFakeJoulebench): its run waits until it is signalled.
func TestSlurmRealNodesCancelled(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	bin := filepath.Join(dir, "jb")
	if err := os.WriteFile(bin, []byte(fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestFakeJoulebench$' -- \"$@\"\n", shellQuote(os.Args[0]))), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	// sbatch hands the job this environment (--export=ALL, its default).
	t.Setenv("FAKE_JB", "1")
	t.Setenv("FAKE_JB_LOG", log)
	t.Setenv("FAKE_JB_RUN_EXIT", "wait")
	src := fmt.Sprintf("name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n"+
		"slurm: {time: \"00:05:00\", poll: 200ms, nodes: 1, agent: {port: %d, telemetry: sim}}\n", port)
	c, err := Load([]byte(src), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sweepLog := &syncLog{}
	done := make(chan error, 1)
	go func() {
		_, err := c.RunSlurm(ctx, c.Expand(), Options{Binary: bin, Log: sweepLog}, nil)
		done <- err
	}()
	jobOut := func() string { return readGlobNames(filepath.Join(c.Dir, "slurm", "*.out")) }
	for !strings.Contains(readFile(log), "run started\n") {
		select {
		case err := <-done:
			t.Fatalf("sweep ended before the run started: %v\n%s\nlog:\n%s\njob:\n%s", err, sweepLog.String(), readFile(log), jobOut())
		case <-ctx.Done():
			t.Fatalf("the run never started:\n%s\nlog:\n%s\njob:\n%s", sweepLog.String(), readFile(log), jobOut())
		case <-time.After(100 * time.Millisecond):
		}
	}
	m := regexp.MustCompile(`submitted \S+: job (\d+),`).FindStringSubmatch(sweepLog.String())
	if m == nil {
		t.Fatalf("no job id:\n%s", sweepLog.String())
	}
	if out, err := exec.Command("scancel", m[1]).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", m[1], err, out)
	}
	if err := <-done; err != nil {
		t.Fatalf("sweep: %v\n%s", err, sweepLog.String())
	}
	if s := sweepLog.String(); !strings.Contains(s, "job "+m[1]+" (") || !strings.Contains(s, "CANCELLED") {
		t.Errorf("sweep log:\n%s\nwant job %s CANCELLED", s, m[1])
	}
	// The script's end (stop_agents) may follow the job's state by a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tokens, _ := filepath.Glob(filepath.Join(c.Dir, "slurm", "*.agent-token"))
		l := readFile(log)
		if len(tokens) == 0 && strings.Contains(l, fmt.Sprintf(":%d stopped\n", port)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the cancel: token files %v, log:\n%s\njob:\n%s", tokens, l, jobOut())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if l := readFile(log); !strings.Contains(l, fmt.Sprintf("run --out %s telemetry agent agents http://", filepath.Join(c.RunsDir(), c.Expand().Runs[0].ID))) ||
		!strings.Contains(l, " read 1\n") {
		t.Errorf("the run did not read its agent:\n%s", l)
	}
}

// readGlobNames is the content of the files matching pattern.
func readGlobNames(pattern string) string {
	paths, _ := filepath.Glob(pattern)
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(readFile(p))
	}
	return b.String()
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestFakeJoulebench is joulebench for TestJobScriptNodesRuns (FAKE_JB=1):
// `agent` serves its token-checked endpoint until SIGTERM, `run` reads
// every --agent with JOULEBENCH_AGENT_TOKEN; both say what they did in
// FAKE_JB_LOG.
func TestFakeJoulebench(t *testing.T) {
	if os.Getenv("FAKE_JB") != "1" {
		t.Skip("joulebench stand-in for TestJobScriptNodesRuns")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	logf := func(format string, a ...any) {
		f, err := os.OpenFile(os.Getenv("FAKE_JB_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(f, format+"\n", a...)
		f.Close()
	}
	flag := func(name string) []string {
		var vs []string
		for i := 0; i+1 < len(args); i++ {
			if args[i] == name {
				vs = append(vs, args[i+1])
			}
		}
		return vs
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	switch args[0] {
	case "agent":
		addr, tokenFile := flag("--listen")[0], flag("--token-file")[0]
		st, err := os.Stat(tokenFile)
		b, _ := os.ReadFile(tokenFile)
		token := string(b)
		if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
			logf("agent %s bad token file %v %q", addr, err, token)
			os.Exit(1)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			logf("agent %s: %v", addr, err)
			os.Exit(1)
		}
		logf("agent %s telemetry %s token %04o 64 hex", addr, flag("--telemetry")[0], st.Mode().Perm())
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+token {
					w.WriteHeader(http.StatusUnauthorized)
				}
			}))
		}()
		<-sigs
		logf("agent %s stopped", addr)
	case "serve":
		// An engine part: a server on its node until SIGTERM.
		addr := flag("--listen")[0]
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			logf("part %s: %v", addr, err)
			os.Exit(1)
		}
		logf("part %s env %s", addr, os.Getenv("FAKE_PART_ENV"))
		go func() { _ = http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) }()
		<-sigs
		logf("part %s stopped", addr)
	case "run":
		if deps := flag("--deployment"); len(deps) > 0 {
			logf("run %s", fakeReadDeployment(deps[0]))
		}
		read := 0
		for _, a := range flag("--agent") {
			ep, err := agent.ParseEndpoint(a) // NAME=URL or URL
			if err != nil {
				logf("run: %v", err)
				os.Exit(1)
			}
			req, _ := http.NewRequest("GET", ep.URL, nil)
			req.Header.Set("Authorization", "Bearer "+os.Getenv("JOULEBENCH_AGENT_TOKEN"))
			resp, err := http.DefaultClient.Do(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				read++
			}
			if err == nil {
				resp.Body.Close()
			}
		}
		logf("run --out %s telemetry %s agents %s read %d", flag("--out")[0], strings.Join(flag("--telemetry"), ","), strings.Join(flag("--agent"), ","), read)
		if os.Getenv("FAKE_JB_RUN_EXIT") == "wait" {
			logf("run started")
			<-sigs
			os.Exit(143)
		}
		code := 0
		fmt.Sscan(os.Getenv("FAKE_JB_RUN_EXIT"), &code)
		os.Exit(code)
	}
}

// writeSlurmStandIns writes into bin the Slurm commands a job script over
// several nodes calls, as stand-ins that run everything here (FAKE_STEPS
// names their step list): srun drops its
// options and runs the command in its own place, noting its PID (the
// step's ID here) and --job-name; scontrol expands n[1-2] to 127.0.0.1 and
// 127.0.0.2; squeue lists the steps as "ID NAME"; scancel --signal=TERM ID
// sends the step SIGTERM, as Slurm sends it to a step's processes, and
// notes "step NAME signalled" in FAKE_JB_LOG.
func writeSlurmStandIns(t *testing.T, bin string) {
	t.Helper()
	for name, body := range map[string]string{
		"srun": "#!/bin/sh\nname=\nwhile [ $# -gt 0 ]; do case $1 in --job-name=*) name=${1#--job-name=}; shift;; --*) shift;; *) break;; esac; done\n" +
			"echo \"$$ $name\" >>\"$FAKE_STEPS\"\nexec \"$@\"\n",
		"scontrol": "#!/bin/sh\n[ \"$1 $2 $3\" = \"show hostnames n[1-2]\" ] || exit 1\nprintf '127.0.0.1\\n127.0.0.2\\n'\n",
		"squeue":   "#!/bin/sh\ncat \"$FAKE_STEPS\"\n",
		"scancel": "#!/bin/sh\n[ \"$1\" = --signal=TERM ] || exit 1\n" +
			"echo \"step $(awk -v id=\"$2\" '$1 == id {print $2}' \"$FAKE_STEPS\") signalled\" >>\"$FAKE_JB_LOG\"\nkill -TERM \"$2\"\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
