package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/telemetry/agent"
)

// A job over several nodes (slurm.nodes) runs, in its batch script on the
// first node:
//
//  1. the node names, from `scontrol show hostnames "$SLURM_JOB_NODELIST"`;
//  2. a per-run token, 32 random bytes in hex, in a file of mode 0600
//     beside the job script (the run's archive directory cannot hold it:
//     the run makes that directory and refuses one that exists);
//  3. on every node, one srun step (a task on that node, --overlap so
//     that the node's other steps share it): `joulebench agent --listen
//     NODE:PORT --token-file TOKEN --telemetry KIND [source flags]`;
//  4. a wait until every agent accepts connections (bash's /dev/tcp,
//     bounded), failing the job if an agent ends or never listens;
//  5. the run itself, here, with `--telemetry agent --agent
//     http://NODE:PORT` for every node and the token in
//     JOULEBENCH_AGENT_TOKEN (the environment, never the command line);
//  6. when the run ends (or the job is cancelled), the agents stopped and
//     the token removed; the job exits with the run's status.
//
// Engine parts started per node (slurm.parts: a prefill engine on one
// node, a decode engine on another) are steps like the agents', started
// after them, waited for after them, given to the run as a deployment
// file and stopped before them (slurmparts.go).

// agentTokenEnv is the environment variable the run reads the agents'
// token from.
const agentTokenEnv = agent.TokenEnv

// agentReadyTries and agentReadyPause bound the wait for the agents: 240
// probes half a second apart, about two minutes.
const (
	agentReadyTries = 240
	agentReadyPause = "0.5"
)

// validateNodes checks slurm.nodes (an integer from 1 to MaxNodes) and
// slurm.agent (only with slurm.nodes; a port; a source other than the
// agent itself).
func (c *Campaign) validateNodes(d *errSink, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.FirstNode(yamlstrict.NodeAt(root, path...), root) }
	n := yamlstrict.NodeAt(root, "slurm", "nodes")
	given := n != nil
	switch {
	case given && n.ShortTag() != "!!int":
		// yaml.v3 truncates 2.5 into an int: the tag tells.
		d.Errorf(n, "slurm.nodes", "expected a whole number of nodes, got %q", n.Value)
	case given && (c.Slurm.Nodes < 1 || c.Slurm.Nodes > MaxNodes):
		d.Errorf(at("slurm", "nodes"), "slurm.nodes", "must be from 1 to %d (the nodes of each run's job), got %d", MaxNodes, c.Slurm.Nodes)
	}
	c.validateParts(d, root)
	if yamlstrict.NodeAt(root, "slurm", "agent") == nil {
		return
	}
	if !given {
		d.Errorf(at("slurm", "agent"), "slurm.agent", "the agents run in a job over several nodes only: set slurm.nodes")
	}
	if p := yamlstrict.NodeAt(root, "slurm", "agent", "port"); p != nil && (p.ShortTag() != "!!int" || c.Slurm.Agent.Port < 1 || c.Slurm.Agent.Port > 65535) {
		d.Errorf(p, "slurm.agent.port", "expected a TCP port from 1 to 65535, got %s", p.Value)
	}
	if c.Slurm.Agent.Telemetry == "agent" {
		d.Errorf(at("slurm", "agent", "telemetry"), "slurm.agent.telemetry", "an agent reads its own node's power: name that node's source (nvml, dcgm, ...), not agent")
	}
	for i, a := range c.Slurm.Agent.Args {
		if name, _, _ := strings.Cut(a, "="); name == "--telemetry" {
			d.Errorf(at("slurm", "agent", "args", strconv.Itoa(i)), fmt.Sprintf("slurm.agent.args[%d]", i), "the agents' source is slurm.agent.telemetry: set it there")
		}
	}
}

// validateNodeArgs checks, for a job over several nodes, that no run
// names its power source (the job gives every run --telemetry agent and
// its agents), and the agents' source and flags the way the run command
// parses --telemetry and the sources' flags (check, when set).
func (c *Campaign) validateNodeArgs(e *errSink, root *yaml.Node, check func([]string) error) {
	if c.Slurm.Nodes < 1 {
		return
	}
	for _, l := range c.argLists() {
		node := yamlstrict.NodeAt(root, l.path...)
		for j, a := range l.args {
			name, _, _ := strings.Cut(a, "=")
			if len(c.Slurm.Parts) > 0 && (name == "--deployment" || name == "--engine-url") {
				e.Errorf(yamlstrict.FirstNode(yamlstrict.NodeAt(node, strconv.Itoa(j)), node), fmt.Sprintf("%s[%d]", l.where(), j),
					"%s: the run benchmarks the engine parts its job starts (slurm.parts, given to the run as --deployment): remove it", name)
			}
			if name == "--telemetry" || name == "--agent" || name == "--agent-token-file" {
				e.Errorf(yamlstrict.FirstNode(yamlstrict.NodeAt(node, strconv.Itoa(j)), node), fmt.Sprintf("%s[%d]", l.where(), j),
					"%s is the job's to give when slurm.nodes is set (every run reads the agents on its nodes: --telemetry agent, "+
						"--agent per node, the token in %s): remove it; name the nodes' power source in slurm.agent.telemetry and its flags in slurm.agent.args",
					name, agentTokenEnv)
			}
		}
	}
	if check == nil || c.Slurm.Agent.Telemetry == "agent" {
		return
	}
	if err := check(c.agentArgs()); err != nil {
		n := yamlstrict.FirstNode(yamlstrict.NodeAt(root, "slurm", "agent"), yamlstrict.FirstNode(yamlstrict.NodeAt(root, "slurm", "nodes"), root))
		e.Errorf(n, "slurm.agent", "the agents' source: %v", err)
	}
}

// envPrefix is NAME=VALUE assignments before a command, each value quoted.
func envPrefix(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		b.WriteString(name + "=" + shellQuote(val) + " ")
	}
	return b.String()
}

// nodeSecretArgs are the flags of a job over several nodes that a dry
// run hides the secrets of, with the run's (nil for a job on one node):
// the agents' source flags and the parts' environments and command lines (partSecretArgs).
func (c *Campaign) nodeSecretArgs() []string {
	if c.Slurm.Nodes < 1 {
		return nil
	}
	return append(c.agentArgs(), c.partSecretArgs()...)
}

// agentArgs are the power source flags of every node's agent.
func (c *Campaign) agentArgs() []string {
	return append([]string{"--telemetry", c.Slurm.Agent.telemetry()}, c.Slurm.Agent.Args...)
}

// The names of the job's steps (srun --job-name), by which stop_steps
// finds their step IDs.
const (
	stepAgent = "joulebench-agent"
	stepPart  = "joulebench-part"
)

// writeStopSteps writes stop_steps NAME PID...: the graceful stop of the
// srun steps named NAME whose sruns are PID... SIGTERM goes to each step's
// processes through Slurm (scancel --signal=TERM JOB.STEP, the step found
// by name with squeue), as a process on one machine is stopped: an engine
// part drains and frees its GPUs, an agent closes its server. Killing the
// srun instead has Slurm kill the step's processes outright (srun does not
// pass SIGTERM on). Up to 30 s later an srun still there is killed (at
// once when no step could be signalled: squeue or scancel failed), and 30 s
// after that with SIGKILL. Slurm ends every step with the job in any case.
func writeStopSteps(b *strings.Builder) {
	b.WriteString("# alive PID...: whether any of them still runs.\n")
	b.WriteString("alive() {\n  for p in \"$@\"; do kill -0 \"$p\" 2>/dev/null && return 0; done\n  return 1\n}\n")
	b.WriteString("# stop_steps NAME PID...: SIGTERM to the steps named NAME (their processes, through Slurm), then their sruns ended.\n")
	b.WriteString("stop_steps() {\n  name=$1\n  shift\n  [ \"$#\" -gt 0 ] || return 0\n")
	b.WriteString("  signalled=\n")
	b.WriteString("  for id in $(squeue -h -s -j \"${SLURM_JOB_ID:-0}\" -o '%i %j' 2>/dev/null | awk -v n=\"$name\" '$2 == n {print $1}'); do\n")
	b.WriteString("    scancel --signal=TERM \"$id\" 2>/dev/null && signalled=1\n  done\n")
	b.WriteString("  if [ -n \"$signalled\" ]; then\n    for _ in $(seq 60); do alive \"$@\" || return 0; sleep 0.5; done\n  fi\n")
	b.WriteString("  kill \"$@\" 2>/dev/null\n")
	b.WriteString("  for _ in $(seq 60); do alive \"$@\" || return 0; sleep 0.5; done\n")
	b.WriteString("  kill -9 \"$@\" 2>/dev/null\n}\n")
}

// writeNodesRun writes the part of a job script over several nodes that
// follows the #SBATCH lines and the exported secrets: the agents (each
// step asking for gres, when the job does), the run (args, without the
// executable) reading them, and their end.
//
// Secrets go in the environment of the command they are for, never on a
// command line (ps shows it to anyone on the node): the run's (env,
// NAME=VALUE as splitSecrets gives them) before the run, the agents' own
// (a --dcgm-url with credentials) before each srun, which passes its
// environment to the step.
func (c *Campaign) writeNodesRun(b *strings.Builder, bin, dir, logDir, gres string, args, env []string) {
	n, port := c.Slurm.Nodes, c.Slurm.Agent.port()
	token := filepath.Join(logDir, filepath.Base(dir)+".agent-token")
	parts := len(c.Slurm.Parts) > 0
	if parts {
		fmt.Fprintf(b, "# A job over %d %s: a power agent on every node, the engine parts on theirs, the run on this (the first) node reading the agents and benchmarking the parts.\n", n, plural(n, "node", "nodes"))
	} else {
		fmt.Fprintf(b, "# A job over %d %s: a power agent on every node, the run on this (the first) node reading them all.\n", n, plural(n, "node", "nodes"))
	}
	b.WriteString("set -u\n")
	b.WriteString("set -- $(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n")
	fmt.Fprintf(b, "if [ \"$#\" -ne %d ]; then echo \"joulebench: the job has $# nodes, slurm.nodes asks for %d\" >&2; exit 1; fi\n", n, n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(b, "node%d=${%d}\n", i, i)
	}
	b.WriteString("# The agents' per-run token: readable by the user alone, removed when the job ends.\n")
	fmt.Fprintf(b, "token=%s\n", shellQuote(token))
	b.WriteString("rm -f \"$token\"\n")
	b.WriteString("(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \\n' >\"$token\") || exit 1\n")
	b.WriteString("agents=\n")
	writeStopSteps(b)
	b.WriteString("stop_agents() {\n  stop_steps " + stepAgent + " $agents\n  rm -f \"$token\"\n}\n")
	if parts {
		// The run's deployment file: no secret in it (the parts' URLs,
		// roles, hosts, kinds and devices); kept with the job's output.
		fmt.Fprintf(b, "deployment=%s\n", shellQuote(filepath.Join(logDir, filepath.Base(dir)+".deployment.yaml")))
		b.WriteString("rm -f \"$deployment\"\n")
		b.WriteString("parts=\n")
		// The parts as the agents, and first: their last power is the run's
		// to read no more, the agents' to serve until the parts are gone.
		b.WriteString("stop_parts() {\n  stop_steps " + stepPart + " $parts\n}\n")
		b.WriteString("trap 'stop_parts; stop_agents' EXIT\n")
	} else {
		b.WriteString("trap stop_agents EXIT\n")
	}
	b.WriteString("trap 'exit 143' TERM\ntrap 'exit 130' INT\n")
	b.WriteString("# wait_agent NODE PID: until the agent on NODE accepts connections, while its step PID lives.\n")
	fmt.Fprintf(b, "wait_agent() {\n  for _ in $(seq %d); do\n", agentReadyTries)
	fmt.Fprintf(b, "    if timeout 5 bash -c 'exec 3<>\"/dev/tcp/$0/$1\"' \"$1\" %d 2>/dev/null; then return 0; fi\n", port)
	fmt.Fprintf(b, "    if ! kill -0 \"$2\" 2>/dev/null; then echo \"joulebench: the agent on $1 ended before it listened on port %d (its output is above)\" >&2; return 1; fi\n", port)
	fmt.Fprintf(b, "    sleep %s\n  done\n", agentReadyPause)
	fmt.Fprintf(b, "  echo \"joulebench: the agent on $1 did not listen on port %d within %d s\" >&2\n  return 1\n}\n", port, agentReadyTries/2)
	agentArgv, agentEnv := splitSecrets(c.agentArgs())
	var tail strings.Builder // after the node's address: the token and the source
	tail.WriteString(" --token-file \"$token\"")
	for _, a := range agentArgv {
		tail.WriteString(" " + shellQuote(a))
	}
	step := "--overlap"
	if gres != "" {
		step += " --gres=" + shellQuote(gres)
	}
	for i := 1; i <= n; i++ {
		b.WriteString(envPrefix(agentEnv))
		fmt.Fprintf(b, "srun --nodes=1 --ntasks=1 --nodelist=\"$node%d\" --job-name=%s %s ", i, stepAgent, step)
		fmt.Fprintf(b, "%s agent --listen \"$node%d:%d\"", shellQuote(bin), i, port)
		b.WriteString(tail.String() + " &\n")
		fmt.Fprintf(b, "agent%d=$!\nagents=\"$agents $agent%d\"\n", i, i)
	}
	if parts {
		c.writeParts(b, step)
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(b, "wait_agent \"$node%d\" \"$agent%d\" || exit 1\n", i, i)
	}
	if parts {
		c.writePartWaits(b)
	}
	b.WriteString(envPrefix(env) + agentTokenEnv + "=\"$(cat \"$token\")\" " + shellQuote(bin))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	if parts {
		b.WriteString(" --deployment \"$deployment\"")
	}
	b.WriteString(" --telemetry agent")
	for i := 1; i <= n; i++ {
		if parts {
			// Named by its node: the parts' devices are NODE:ID.
			fmt.Fprintf(b, " --agent \"$node%d=http://$node%d:%d\"", i, i, port)
			continue
		}
		fmt.Fprintf(b, " --agent \"http://$node%d:%d\"", i, port)
	}
	b.WriteString("\nexit $?\n")
}

// checkNodes refuses, before anything is submitted, a job over more
// nodes than its partition has (sinfo): Slurm would keep it pending for
// ever. A job on one node needs no check.
func (c *Campaign) checkNodes(ctx context.Context, run Commander) error {
	if c.Slurm.Nodes <= 1 {
		return nil
	}
	args := []string{"-h", "-N", "-o", "%N|%P"}
	part := c.Slurm.Partition
	if part != "" {
		args = append(args, "-p", part)
	}
	out, err := run(ctx, "sinfo", args...)
	if err != nil {
		return fmt.Errorf("slurm.nodes: %d: cannot count the cluster's nodes: %w", c.Slurm.Nodes, err)
	}
	nodes := map[string]bool{}
	var dflt string
	for _, line := range strings.Split(string(out), "\n") {
		name, p, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok || name == "" {
			continue
		}
		// Without slurm.partition the job goes to the default partition
		// (sinfo marks it with *).
		if part == "" && !strings.HasSuffix(p, "*") {
			continue
		}
		dflt = strings.TrimSuffix(p, "*")
		nodes[name] = true
	}
	if len(nodes) >= c.Slurm.Nodes {
		return nil
	}
	where := "partition " + part
	if part == "" {
		where = "the default partition"
		if dflt != "" {
			where += " " + dflt
		}
	}
	return exitcode.With(exitcode.Invalid, fmt.Errorf("slurm.nodes: %d cannot be scheduled: the cluster has %d %s in %s; nothing was submitted",
		c.Slurm.Nodes, len(nodes), plural(len(nodes), "node", "nodes"), where))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
