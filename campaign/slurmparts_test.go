package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/runner"
)

// twoNodeParts is a disaggregated deployment over two nodes: prefill and
// the router on node 1, decode on node 2.
const twoNodeParts = twoNodes + `  entry: router
  parts:
    - name: prefill
      role: prefill
      node: 1
      port: 8100
      kind: vllm
      command: [vllm, serve, org/m, --port, "8100", --kv-transfer-config, '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}']
      env: {VLLM_NIXL_SIDE_CHANNEL_HOST: "{node}", VLLM_NIXL_SIDE_CHANNEL_PORT: "5600", HF_TOKEN: hf_partsecret0123456789}
      devices: [gpu0, gpu1]
    - name: decode
      role: decode
      node: 2
      port: 8200
      kind: vllm
      command: [vllm, serve, org/m, --port, "8200"]
      devices: [gpu0]
    - name: router
      role: router
      node: 1
      port: 8192
      command: [python, proxy.py, --port, "8192", --prefiller-hosts, "{node1}", --decoder-hosts, "{node2}", "--x=a {node}b"]
`

// A job over two nodes with slurm.parts starts each part by srun on its
// node (its environment before srun, never on a command line), writes
// the run's deployment file (0600) naming the parts at the nodes the job
// was given, waits for the agents and then every part, runs the run with
// --deployment and the agents named by node (the parts' devices are
// NODE:ID), and stops the parts before the agents.
func TestJobScriptParts(t *testing.T) {
	c := load(t, strings.Replace(twoNodeParts, "slurm: {nodes: 2, time: \"01:00:00\"}\n", "slurm:\n  nodes: 2\n  time: \"01:00:00\"\n", 1))
	r := c.Expand().Runs[0]
	s := c.JobScript(r, "/opt/jb", "/shared/out/runs/x")
	dep := c.Dir + "/slurm/x.deployment.yaml"
	step := "--job-name=joulebench-part --overlap --gres=gpu:4 "
	wantInOrder := []string{
		"\ndeployment=" + dep + "\nrm -f \"$deployment\"\nparts=\n",
		"\ntrap 'stop_parts; stop_agents' EXIT\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node2\" --job-name=joulebench-agent --overlap --gres=gpu:4 /opt/jb agent --listen \"$node2:4780\" --token-file \"$token\" --telemetry nvml &\n",
		"\nHF_TOKEN=hf_partsecret0123456789 VLLM_NIXL_SIDE_CHANNEL_HOST=\"$node1\" VLLM_NIXL_SIDE_CHANNEL_PORT=5600 srun --nodes=1 --ntasks=1 --nodelist=\"$node1\" " + step +
			"vllm serve org/m --port 8100 --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}' &\npart1=$!\nparts=\"$parts $part1\"\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node2\" " + step + "vllm serve org/m --port 8200 &\npart2=$!\nparts=\"$parts $part2\"\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node1\" " + step + "python proxy.py --port 8192 --prefiller-hosts \"$node1\" --decoder-hosts \"$node2\" '--x=a '\"$node1\"b &\npart3=$!\nparts=\"$parts $part3\"\n",
		"\n(umask 077 && cat >\"$deployment\") <<EOF || exit 1\n" +
			"entry: \"router\"\nparts:\n" +
			"  - name: \"prefill\"\n    role: \"prefill\"\n    host: \"$node1\"\n    url: \"http://$node1:8100\"\n    kind: \"vllm\"\n    devices: [\"$node1:gpu0\", \"$node1:gpu1\"]\n" +
			"  - name: \"decode\"\n    role: \"decode\"\n    host: \"$node2\"\n    url: \"http://$node2:8200\"\n    kind: \"vllm\"\n    devices: [\"$node2:gpu0\"]\n" +
			"  - name: \"router\"\n    role: \"router\"\n    host: \"$node1\"\n    url: \"http://$node1:8192\"\n" +
			"EOF\n",
		"\n    if ! kill -0 \"$4\" 2>/dev/null; then echo \"joulebench: part $1 on $2 ended before it listened on port $3 (its output is above)\" >&2; return 1; fi\n",
		"\nwait_agent \"$node1\" \"$agent1\" || exit 1\nwait_agent \"$node2\" \"$agent2\" || exit 1\n" +
			"wait_part prefill \"$node1\" 8100 \"$part1\" || exit 1\nwait_part decode \"$node2\" 8200 \"$part2\" || exit 1\nwait_part router \"$node1\" 8192 \"$part3\" || exit 1\n",
		"\nJOULEBENCH_AGENT_TOKEN=\"$(cat \"$token\")\" /opt/jb run --spec " + c.SpecFile("/shared/out/runs/x") + " --out /shared/out/runs/x --no-progress" +
			" --deployment \"$deployment\" --telemetry agent --agent \"$node1=http://$node1:4780\" --agent \"$node2=http://$node2:4780\"\nexit $?\n",
	}
	rest := s
	for _, want := range wantInOrder {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("script lacks, after what precedes it, %q:\n%s", want, s)
		}
		rest = rest[i+len(want)-1:] // its last newline starts the next
	}
	// stop_parts ends the parts' steps as stop_agents the agents'
	// (stop_steps: SIGTERM through Slurm, then their sruns); the trap
	// runs it first.
	for _, want := range []string{"\nstop_parts() {\n  stop_steps joulebench-part $parts\n}\n", "\nstop_agents() {\n  stop_steps joulebench-agent $agents\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "srun --nodes=1 "); n != 5 {
		t.Errorf("%d srun launches, want 2 agents and 3 parts:\n%s", n, s)
	}
	// The dry run hides the part's secret (a secret name's value).
	var dry strings.Builder
	if err := c.DryRun(&dry, c.Expand(), "/opt/jb", "slurm", redact.New()); err != nil {
		t.Fatal(err)
	}
	if d := dry.String(); strings.Contains(d, "hf_partsecret") || !strings.Contains(d, "VLLM_NIXL_SIDE_CHANNEL_PORT=5600 srun") {
		t.Errorf("dry run:\n%s", d)
	}
}

// A part's argument is quoted for sh, each {node} and {nodeK} the node's
// name when the job runs.
func TestPartWord(t *testing.T) {
	for _, tc := range []struct {
		in   string
		own  int
		want string
	}{
		{"plain", 1, "plain"},
		{"{node}", 2, `"$node2"`},
		{"{node1}:8100", 2, `"$node1":8100`},
		{"{\"a\": \"{node}\"}", 1, `'{"a": "'"$node1"'"}'`},
		{"$HOME {node}", 1, `'$HOME '"$node1"`},
		{"{nodes}", 1, "'{nodes}'"},
	} {
		if got := partWord(tc.in, tc.own); got != tc.want {
			t.Errorf("partWord(%q, %d) = %s, want %s", tc.in, tc.own, got, tc.want)
		}
	}
}

// A quote, a dollar or a backquote in what the deployment file says is
// written as is, not expanded by the here-document.
func TestHeredocText(t *testing.T) {
	for in, want := range map[string]string{
		`"a"`:   `"a"`,
		"$HOME": `\$HOME`,
		"`id`":  "\\`id\\`",
		`a\nb`:  `a\\nb`,
	} {
		if got := heredocText(in); got != want {
			t.Errorf("heredocText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadPartsErrors(t *testing.T) {
	const head = "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	part := func(fields string) string { return "    - {" + fields + "}\n" }
	const ok = "name: a, role: prefill, node: 1, port: 8100, command: [srv]"
	for _, tc := range []struct{ name, src, want string }{
		{"parts without nodes", head + "slurm:\n  parts:\n" + part(ok),
			"c.yaml:7:5: slurm.parts: the job starts engine parts on its nodes only as a job over several nodes: set slurm.nodes"},
		{"node 3 of 2", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 3, port: 8100, command: [srv]"),
			"c.yaml:8:38: slurm.parts[0].node: node 3: the job has 2 nodes (slurm.nodes): from 1 to 2"},
		{"node 0", head + "slurm:\n  nodes: 1\n  parts:\n" + part("name: a, role: prefill, node: 0, port: 8100, command: [srv]"),
			"c.yaml:8:38: slurm.parts[0].node: node 0: the job has 1 node (slurm.nodes): from 1 to 1"},
		{"no node", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, port: 8100, command: [srv]"),
			"c.yaml:8:7: slurm.parts[0].node: required: the node the part runs on, from 1 (the run's node) to slurm.nodes"},
		{"no entry with several parts", head + "slurm:\n  nodes: 2\n  parts:\n" + part(ok) + part("name: b, role: decode, node: 2, port: 8200, command: [srv]"),
			"c.yaml:6:3: slurm.entry: required with several parts: the part requests go to (one of a, b)"},
		{"entry names no part", head + "slurm:\n  nodes: 2\n  entry: c\n  parts:\n" + part(ok),
			`c.yaml:7:10: slurm.entry: "c" is not a part (parts: a)`},
		{"entry without parts", head + "slurm: {nodes: 2, entry: a}\n", "c.yaml:5:26: slurm.entry: names one of slurm.parts: there are none"},
		{"duplicate names", head + "slurm:\n  nodes: 2\n  entry: a\n  parts:\n" + part(ok) + part("name: a, role: decode, node: 2, port: 8200, command: [srv]"),
			`c.yaml:10:14: slurm.parts[1].name: part "a" named twice`},
		{"port out of range", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, port: 70000, command: [srv]"),
			"c.yaml:8:47: slurm.parts[0].port: expected a TCP port from 1 to 65535, got 70000"},
		{"port zero", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, port: 0, command: [srv]"),
			"c.yaml:8:47: slurm.parts[0].port: expected a TCP port from 1 to 65535, got 0"},
		{"no port", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, command: [srv]"),
			"c.yaml:8:7: slurm.parts[0].port: required: the TCP port the part listens on, on its node"},
		{"port taken on the node", head + "slurm:\n  nodes: 2\n  entry: a\n  parts:\n" + part(ok) + part("name: b, role: router, node: 1, port: 8100, command: [srv]"),
			`c.yaml:10:46: slurm.parts[1].port: port 8100 on node 1 is part "a"'s already`},
		{"the agent's port", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, port: 4780, command: [srv]"),
			"c.yaml:8:47: slurm.parts[0].port: 4780 is the port of the agent on every node (slurm.agent.port)"},
		{"role", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: cache, node: 1, port: 8100, command: [srv]"),
			`c.yaml:8:23: slurm.parts[0].role: "cache": want one of prefill, decode, router, replica`},
		{"no command", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, port: 8100"),
			"c.yaml:8:7: slurm.parts[0].command: required: the part's command line"},
		{"kind", head + "slurm:\n  nodes: 2\n  parts:\n" + part(ok+", kind: bogus"),
			`c.yaml:8:75: slurm.parts[0].kind: --engine "bogus" with --engine-url: want`},
		{"device with the node", head + "slurm:\n  nodes: 2\n  parts:\n" + part(ok+", devices: [n1:gpu0]"),
			`c.yaml:8:79: slurm.parts[0].devices[0]: "n1:gpu0": a device ID as the node's agent lists it`},
		{"device twice on a node", head + "slurm:\n  nodes: 2\n  entry: a\n  parts:\n" + part(ok+", devices: [gpu0]") +
			part("name: b, role: decode, node: 1, port: 8200, command: [srv], devices: [gpu0]"),
			`c.yaml:10:78: slurm.parts[1].devices[0]: device gpu0 of node 1 is part "a"'s already`},
		{"env name", head + "slurm:\n  nodes: 2\n  parts:\n" + part(ok+", env: {'A B': x}"),
			`slurm.parts[0].env: "A B": an environment variable's name`},
		{"a node the job lacks", head + "slurm:\n  nodes: 2\n  parts:\n" + part("name: a, role: prefill, node: 1, port: 8100, command: [srv, --peer, '{node3}']"),
			"c.yaml:8:76: slurm.parts[0].command[2]: {node3}: the job's nodes are {node1} to {node2} ({node}: the part's own)"},
		{"the run names a server", head + "args: [--engine-url, http://x:1]\nslurm:\n  nodes: 2\n  parts:\n" + part(ok),
			"c.yaml:5:8: args[0]: --engine-url: the run benchmarks the engine parts its job starts (slurm.parts, given to the run as --deployment): remove it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.src), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// Two parts on one port of different nodes, one device ID on each:
	// fine.
	if _, err := Load([]byte(head+"slurm:\n  nodes: 2\n  entry: a\n  parts:\n"+part(ok+", devices: [gpu0]")+
		part("name: b, role: decode, node: 2, port: 8100, command: [srv], devices: [gpu0]")), "c.yaml"); err != nil {
		t.Error(err)
	}
}

// fakeReadDeployment is what the fake run (TestFakeJoulebench) says of
// its --deployment file: its mode, the file as the run reads it
// (runner.ParseDeployment), and how many of its parts answered a
// request.
func fakeReadDeployment(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "deployment: " + err.Error()
	}
	src, _ := os.ReadFile(path)
	df, err := runner.ParseDeployment(src, path, all.Registry())
	if err != nil {
		return "deployment: " + err.Error()
	}
	var parts []string
	served := 0
	for _, p := range df.Parts {
		parts = append(parts, fmt.Sprintf("%s/%s/%s/%s/%s/%s", p.Name, p.Role, p.Host, p.URL, p.Kind, strings.Join(p.Devices, "+")))
		if resp, err := http.Get(p.URL); err == nil {
			resp.Body.Close()
			served++
		}
	}
	return fmt.Sprintf("deployment %04o entry %s parts %s served %d", st.Mode().Perm(), df.Entry, strings.Join(parts, ","), served)
}

// freePort is a port nothing listens on at host, now.
func freePort(t *testing.T, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Skipf("%s is not a local address here: %v", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The job script with parts, run by bash with srun and scontrol standing
// in for Slurm's (a step runs its command here, node 1 is 127.0.0.1,
// node 2 127.0.0.2) and this test binary for joulebench and for the
// parts (TestFakeJoulebench serve): each part listens on its node with
// its environment, the run starts once the agents and the parts listen
// and reads a deployment file (0600) that the run's own parser takes,
// naming each part at its node's address, with its devices as NODE:ID;
// the parts are stopped before the agents. A part that ends before it
// listens fails the job before the run starts; a cancelled job stops
// everything.
func TestJobScriptPartsRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	agentPort, partPort, routerPort := freePort(t, "127.0.0.2"), freePort(t, "127.0.0.2"), freePort(t, "127.0.0.1")
	for _, tc := range []struct {
		name     string
		runExit  string // the fake run's exit status, or "wait": until SIGTERM
		decode   string // the decode part's command after the stand-in
		wantExit int
	}{
		{"complete", "0", fmt.Sprintf("[serve, --listen, '127.0.0.2:%d']", partPort), 0},
		{"a part ends first", "0", "[exit-at-once]", 1},
		{"cancelled", "wait", fmt.Sprintf("[serve, --listen, '127.0.0.2:%d']", partPort), 143},
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
			write("jb", fmt.Sprintf("#!/bin/sh\n[ \"$1\" = exit-at-once ] && exit 1\nexec %s -test.run='^TestFakeJoulebench$' -- \"$@\"\n", shellQuote(os.Args[0])))
			jb := filepath.Join(bin, "jb")
			src := fmt.Sprintf(`name: t
profile: benchmark-1.5
out: out
matrix: {engine: [{kind: sim}]}
slurm:
  nodes: 2
  agent: {port: %d, telemetry: sim}
  entry: router
  parts:
    - {name: prefill, role: prefill, node: 1, port: %d, kind: vllm, devices: [gpu0, gpu1], env: {FAKE_PART_ENV: prefill-env},
       command: [%s, serve, --listen, '{node}:%d']}
    - {name: decode, role: decode, node: 2, port: %d, devices: [gpu0], command: [%s, %s]}
    - {name: router, role: router, node: 1, port: %d, command: [%s, serve, --listen, '127.0.0.1:%d']}
`, agentPort, partPort, jb, partPort, partPort, jb, strings.Trim(tc.decode, "[]"), routerPort, jb, routerPort)
			c := load(t, src)
			out := filepath.Join(dir, "runs", "x")
			script := filepath.Join(dir, "job.sh")
			if err := os.WriteFile(script, []byte(c.JobScript(c.Expand().Runs[0], jb, out)), 0o700); err != nil {
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
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.runExit == "wait" {
				deadline := time.Now().Add(30 * time.Second)
				for !strings.Contains(readFile(log), "run started\n") {
					if time.Now().After(deadline) {
						_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						t.Fatalf("the run never started:\n%s\n%s", readFile(log), stderr.String())
					}
					time.Sleep(50 * time.Millisecond)
				}
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
			if tc.wantExit == 1 {
				want := fmt.Sprintf("joulebench: part decode on 127.0.0.2 ended before it listened on port %d", partPort)
				if !strings.Contains(stderr.String(), want) || strings.Contains(l, "run ") {
					t.Errorf("want %q and no run:\nlog:\n%s\njob:\n%s", want, l, stderr.String())
				}
			} else {
				for _, want := range []string{
					fmt.Sprintf("part 127.0.0.1:%d env prefill-env\n", partPort),
					fmt.Sprintf("part 127.0.0.2:%d env \n", partPort),
					fmt.Sprintf("run deployment 0600 entry router parts prefill/prefill/127.0.0.1/http://127.0.0.1:%d/vllm/127.0.0.1:gpu0+127.0.0.1:gpu1,"+
						"decode/decode/127.0.0.2/http://127.0.0.2:%d//127.0.0.2:gpu0,router/router/127.0.0.1/http://127.0.0.1:%d// served 3\n", partPort, partPort, routerPort),
					fmt.Sprintf("run --out %s telemetry agent agents 127.0.0.1=http://127.0.0.1:%d,127.0.0.2=http://127.0.0.2:%d read 2\n", out, agentPort, agentPort),
				} {
					if !strings.Contains(l, want) {
						t.Errorf("log lacks %q:\n%s\njob:\n%s", want, l, stderr.String())
					}
				}
			}
			// Each part's and agent's step is stopped through Slurm
			// (scancel --signal=TERM, found by its name); the part that
			// ended at once has no step left to signal.
			wantParts := 3
			if tc.wantExit == 1 {
				wantParts = 2
			}
			if n := strings.Count(l, "step joulebench-part signalled\n"); n < wantParts {
				t.Errorf("%d part steps signalled through Slurm, want %d:\n%s", n, wantParts, l)
			}
			if n := strings.Count(l, "step joulebench-agent signalled\n"); n != 2 {
				t.Errorf("%d agent steps signalled through Slurm, want 2:\n%s", n, l)
			}
			// Every part and agent stopped; when the job ended by itself,
			// the parts before the agents.
			lastPart, firstAgent := -1, len(l)
			for _, addr := range []string{fmt.Sprintf("127.0.0.1:%d", partPort), fmt.Sprintf("127.0.0.2:%d", partPort), fmt.Sprintf("127.0.0.1:%d", routerPort)} {
				if tc.wantExit == 1 && addr == fmt.Sprintf("127.0.0.2:%d", partPort) {
					continue // it never started
				}
				i := strings.Index(l, "part "+addr+" stopped\n")
				if i < 0 {
					t.Errorf("part %s not stopped:\n%s\njob:\n%s", addr, l, stderr.String())
				}
				lastPart = max(lastPart, i)
			}
			for _, addr := range []string{fmt.Sprintf("127.0.0.1:%d", agentPort), fmt.Sprintf("127.0.0.2:%d", agentPort)} {
				i := strings.Index(l, "agent "+addr+" stopped\n")
				if i < 0 {
					t.Errorf("agent %s not stopped:\n%s", addr, l)
				}
				firstAgent = min(firstAgent, i)
			}
			if tc.runExit != "wait" && lastPart > firstAgent {
				t.Errorf("an agent stopped before a part:\n%s", l)
			}
			if _, err := os.Stat(filepath.Join(c.Dir, "slurm", "x.agent-token")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("token file left: %v", err)
			}
		})
	}
}

// On the CI's one-node cluster (JOULEBENCH_SLURM=1 after
// .ci/start-slurm.sh), a nodes: 1 campaign whose one part is a stand-in
// OpenAI-compatible server (this test binary, TestFakeJoulebench serve;
// there is no simulator server command): sbatch runs the job, srun the
// agent and the part on the node, the run reads the deployment file the
// job wrote, reaches the part at the node's name, and the part and the
// agent are stopped when the run ends.
func TestSlurmRealNodesParts(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%N").Output()
	nodes := strings.Fields(string(out))
	if err != nil || len(nodes) != 1 {
		t.Skipf("this test expects the one-node CI cluster; sinfo: %v %q", err, out)
	}
	node := nodes[0]
	agentPort, partPort := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	dir := t.TempDir()
	bin := filepath.Join(dir, "jb")
	if err := os.WriteFile(bin, []byte(fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestFakeJoulebench$' -- \"$@\"\n", shellQuote(os.Args[0]))), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	t.Setenv("FAKE_JB", "1")
	t.Setenv("FAKE_JB_LOG", log)
	t.Setenv("FAKE_JB_RUN_EXIT", "0")
	src := fmt.Sprintf("name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n"+
		"slurm:\n  time: \"00:05:00\"\n  poll: 200ms\n  nodes: 1\n  agent: {port: %d, telemetry: sim}\n"+
		"  parts:\n    - {name: server, role: replica, node: 1, port: %d, env: {FAKE_PART_ENV: on-node}, command: [%s, serve, --listen, '%s:%d']}\n",
		agentPort, partPort, bin, node, partPort)
	c, err := Load([]byte(src), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sweepLog := &syncLog{}
	if _, err := c.RunSlurm(ctx, c.Expand(), Options{Binary: bin, Log: sweepLog}, nil); err != nil {
		t.Fatalf("sweep: %v\n%s", err, sweepLog.String())
	}
	jobOut := readGlobNames(filepath.Join(c.Dir, "slurm", "*.out"))
	addr := fmt.Sprintf("%s:%d", node, partPort)
	l := readFile(log)
	for _, want := range []string{
		"part " + addr + " env on-node\n",
		fmt.Sprintf("run deployment 0600 entry server parts server/replica/%s/http://%s// served 1\n", node, addr),
		fmt.Sprintf("agents %s=http://%s:%d read 1\n", node, node, agentPort),
	} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s\nsweep:\n%s\njob:\n%s", want, l, sweepLog.String(), jobOut)
		}
	}
	// srun, signalled by the job's end, has Slurm end the part's and the
	// agent's steps (their processes killed): nothing listens any more.
	for _, port := range []int{partPort, agentPort} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", node, port), time.Second)
			if err != nil {
				break
			}
			conn.Close()
			if time.Now().After(deadline) {
				t.Fatalf("port %d still served after the job:\n%s\njob:\n%s", port, l, jobOut)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// The disaggregated vLLM example of docs/campaigns.md loads, and its job
// starts prefill and the router on node 1, decode on node 2, each with
// the node names where the example puts {node}, {node1} and {node2}.
func TestDocsPartsExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "campaigns.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\n# pd-70b.yaml\n")
	if !ok {
		t.Fatal("docs/campaigns.md shows no pd-70b.yaml")
	}
	block, _, _ = strings.Cut(block, "```")
	c, err := Load([]byte(block), filepath.Join(t.TempDir(), "pd-70b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.JobScript(c.Expand().Runs[0], "/opt/jb", "/shared/pd/runs/x")
	for _, want := range []string{
		"\nUCX_NET_DEVICES=all VLLM_NIXL_SIDE_CHANNEL_HOST=\"$node1\" VLLM_NIXL_SIDE_CHANNEL_PORT=5600 srun --nodes=1 --ntasks=1 --nodelist=\"$node1\" --job-name=joulebench-part --overlap --gres=gpu:8 vllm serve meta-llama/Llama-3.1-70B-Instruct --port 8100 ",
		"\nUCX_NET_DEVICES=all VLLM_NIXL_SIDE_CHANNEL_HOST=\"$node2\" VLLM_NIXL_SIDE_CHANNEL_PORT=5600 srun --nodes=1 --ntasks=1 --nodelist=\"$node2\" ",
		" --prefiller-hosts \"$node1\" --prefiller-ports 8100 --decoder-hosts \"$node2\" --decoder-ports 8200 &\n",
		"\nentry: \"router\"\n",
		"    devices: [\"$node2:gpu0\", ",
		" --deployment \"$deployment\" --telemetry agent --agent \"$node1=http://$node1:4780\" --agent \"$node2=http://$node2:4780\"\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
}
