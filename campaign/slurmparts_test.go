package campaign

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/redact"
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
      env: {VLLM_NIXL_SIDE_CHANNEL_PORT: "5600", HF_TOKEN: hf_partsecret0123456789}
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
      command: [python, proxy.py, --port, "8192"]
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
	step := "--overlap --gres=gpu:4 "
	wantInOrder := []string{
		"\ndeployment=" + dep + "\nrm -f \"$deployment\"\nparts=\n",
		"\ntrap 'stop_parts; stop_agents' EXIT\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node2\" --overlap --gres=gpu:4 /opt/jb agent --listen \"$node2:4780\" --token-file \"$token\" --telemetry nvml &\n",
		"\nHF_TOKEN=hf_partsecret0123456789 VLLM_NIXL_SIDE_CHANNEL_PORT=5600 srun --nodes=1 --ntasks=1 --nodelist=\"$node1\" " + step +
			"vllm serve org/m --port 8100 --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}' &\npart1=$!\nparts=\"$parts $part1\"\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node2\" " + step + "vllm serve org/m --port 8200 &\npart2=$!\nparts=\"$parts $part2\"\n",
		"\nsrun --nodes=1 --ntasks=1 --nodelist=\"$node1\" " + step + "python proxy.py --port 8192 &\npart3=$!\nparts=\"$parts $part3\"\n",
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
	// stop_parts ends the parts as stop_agents the agents (SIGTERM, then
	// SIGKILL after 30 s); the trap runs it first.
	if !strings.Contains(s, "\nstop_parts() {\n  if [ -n \"$parts\" ]; then\n    kill $parts 2>/dev/null\n    for _ in $(seq 60); do kill -0 $parts 2>/dev/null || break; sleep 0.5; done\n    kill -9 $parts 2>/dev/null\n  fi\n}\n") {
		t.Errorf("no stop_parts:\n%s", s)
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
