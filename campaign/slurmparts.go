package campaign

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/yamlstrict"
)

// Engine parts started by a job over several nodes (slurm.parts): each
// part is an srun step on its node, like the agent's, running the part's
// own command line; the job writes a --deployment file whose parts are
// those servers, external to the run (url: http://NODE:PORT, host NODE,
// the node names known only when the job runs), waits until every part
// listens, and gives the run that file. The parts are stopped before the
// agents when the run ends or the job is cancelled.

// partReadyTries and partReadyPause bound the wait for the parts: 3600
// probes half a second apart, about 30 minutes (an engine loads its
// model before it listens).
const (
	partReadyTries = 3600
	partReadyPause = "0.5"
)

// envNameRE is an environment variable's name, as sh takes one in an
// assignment.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateParts checks slurm.parts and slurm.entry: parts only with
// slurm.nodes; each a name given once, a role, a node of the job, a port
// that no other part nor the agent takes on that node, a command line,
// a kind (and api) the run can attach to, devices each part's own and
// environment names sh takes; and the entry, required with several parts,
// one of them.
func (c *Campaign) validateParts(d *errSink, root *yaml.Node) {
	partsNode := yamlstrict.NodeAt(root, "slurm", "parts")
	entryNode := yamlstrict.NodeAt(root, "slurm", "entry")
	if partsNode == nil {
		if entryNode != nil {
			d.Errorf(entryNode, "slurm.entry", "names one of slurm.parts: there are none")
		}
		return
	}
	if yamlstrict.NodeAt(root, "slurm", "nodes") == nil {
		d.Errorf(partsNode, "slurm.parts", "the job starts engine parts on its nodes only as a job over several nodes: set slurm.nodes")
	}
	if len(c.Slurm.Parts) == 0 {
		d.Errorf(partsNode, "slurm.parts", "expected at least one part (or no slurm.parts: the run starts its engine itself)")
		return
	}
	names := map[string]bool{}
	ports := map[[2]int]string{} // node, port -> part
	owner := map[string]string{} // node:device -> part
	agentPort := c.Slurm.Agent.port()
	for i, p := range c.Slurm.Parts {
		idx := strconv.Itoa(i)
		where := fmt.Sprintf("slurm.parts[%d]", i)
		item := yamlstrict.NodeAt(partsNode, idx)
		at := func(path ...string) *yaml.Node { return yamlstrict.FirstNode(yamlstrict.NodeAt(item, path...), item) }
		switch {
		case p.Name == "":
			d.Errorf(at("name"), where+".name", "required: letters, digits, '.', '_' or '-'")
		case !nameRE.MatchString(p.Name):
			d.Errorf(at("name"), where+".name", "%q: letters, digits, '.', '_' or '-'", p.Name)
		case names[p.Name]:
			d.Errorf(at("name"), where+".name", "part %q named twice", p.Name)
		}
		names[p.Name] = true
		if !slices.Contains(record.Roles, p.Role) {
			d.Errorf(at("role"), where+".role", "%q: want one of %s", p.Role, strings.Join(record.Roles, ", "))
		}
		nodeOK := c.validatePartNode(d, item, where, p)
		if n := yamlstrict.NodeAt(item, "port"); n == nil {
			d.Errorf(at("port"), where+".port", "required: the TCP port the part listens on, on its node")
		} else if n.ShortTag() != "!!int" || p.Port < 1 || p.Port > 65535 {
			d.Errorf(n, where+".port", "expected a TCP port from 1 to 65535, got %s", n.Value)
		} else if nodeOK {
			key := [2]int{p.Node, p.Port}
			switch {
			case p.Port == agentPort:
				d.Errorf(n, where+".port", "%d is the port of the agent on every node (slurm.agent.port): give the part another", p.Port)
			case ports[key] != "":
				d.Errorf(n, where+".port", "port %d on node %d is part %q's already", p.Port, p.Node, ports[key])
			default:
				ports[key] = p.Name
			}
		}
		c.validatePartCommand(d, at, where, p)
		for j, dev := range p.Devices {
			n := at("devices", strconv.Itoa(j))
			w := fmt.Sprintf("%s.devices[%d]", where, j)
			if dev == "" || strings.ContainsAny(dev, ": \t\n\r\x00\"'\\$`") {
				d.Errorf(n, w, "%q: a device ID as the node's agent lists it (gpu0, ...): no spaces, quotes, '\\', '$', '`' or ':' (the job adds the node's name)", dev)
				continue
			}
			key := strconv.Itoa(p.Node) + ":" + dev
			if o, dup := owner[key]; dup && nodeOK {
				d.Errorf(n, w, "device %s of node %d is part %q's already", dev, p.Node, o)
			}
			owner[key] = p.Name
		}
		for _, k := range sortedKeys(p.Env) {
			if !envNameRE.MatchString(k) {
				d.Errorf(at("env", k), where+".env", "%q: an environment variable's name (letters, digits, '_', not a digit first)", k)
			}
			c.validateNodeRefs(d, at("env", k), where+".env."+k, p.Env[k])
		}
	}
	switch {
	case c.Slurm.Entry == "" && len(c.Slurm.Parts) > 1:
		d.Errorf(yamlstrict.FirstNode(yamlstrict.NodeAt(root, "slurm"), root), "slurm.entry",
			"required with several parts: the part requests go to (one of %s)", strings.Join(c.partNames(), ", "))
	case c.Slurm.Entry != "" && !names[c.Slurm.Entry]:
		d.Errorf(entryNode, "slurm.entry", "%q is not a part (parts: %s)", c.Slurm.Entry, strings.Join(c.partNames(), ", "))
	}
}

// validatePartCommand checks a part's command line (given, no NUL, its
// node references among the job's nodes) and its kind and API.
func (c *Campaign) validatePartCommand(d *errSink, at func(path ...string) *yaml.Node, where string, p SlurmPart) {
	if len(p.Command) == 0 || strings.TrimSpace(p.Command[0]) == "" {
		d.Errorf(at("command"), where+".command", "required: the part's command line, one argument per item (e.g. [vllm, serve, MODEL, --port, '8100'])")
	}
	for j, a := range p.Command {
		c.validateNodeRefs(d, at("command", strconv.Itoa(j)), fmt.Sprintf("%s.command[%d]", where, j), a)
	}
	if _, err := c.registry().ForRemote(p.Kind, p.API); err != nil {
		d.Errorf(at("kind"), where+".kind", "%v", err)
	}
}

// validatePartNode checks a part's node: given, a whole number, one of
// the job's nodes. It reports whether it is one.
func (c *Campaign) validatePartNode(d *errSink, item *yaml.Node, where string, p SlurmPart) bool {
	n := yamlstrict.NodeAt(item, "node")
	nodes := c.Slurm.Nodes
	switch {
	case n == nil:
		d.Errorf(item, where+".node", "required: the node the part runs on, from 1 (the run's node) to slurm.nodes")
	case n.ShortTag() != "!!int":
		d.Errorf(n, where+".node", "expected a node number, got %q", n.Value)
	case nodes >= 1 && (p.Node < 1 || p.Node > nodes):
		d.Errorf(n, where+".node", "node %d: the job has %d %s (slurm.nodes): from 1 to %d", p.Node, nodes, plural(nodes, "node", "nodes"), nodes)
	case nodes < 1 && p.Node < 1:
		d.Errorf(n, where+".node", "node %d: from 1 (the run's node) to slurm.nodes", p.Node)
	default:
		return nodes >= 1
	}
	return false
}

// nodeRefRE is a node's name in a part's command or environment, given
// when the job runs: {node} (the part's own node) or {nodeK} (node K).
var nodeRefRE = regexp.MustCompile(`\{node([0-9]*)\}`)

// validateNodeRefs checks that every {nodeK} in v names one of the
// job's nodes.
func (c *Campaign) validateNodeRefs(d *errSink, n *yaml.Node, where, v string) {
	for _, m := range nodeRefRE.FindAllStringSubmatch(v, -1) {
		if m[1] == "" {
			continue
		}
		if k, err := strconv.Atoi(m[1]); err != nil || k < 1 || (c.Slurm.Nodes >= 1 && k > c.Slurm.Nodes) {
			d.Errorf(n, where, "%s: the job's nodes are {node1} to {node%d} ({node}: the part's own)", m[0], max(c.Slurm.Nodes, 1))
		}
	}
}

// partWord is v quoted for sh with each {node} and {nodeK} the node's
// name, which the job learns when it runs ("$nodeK").
func partWord(v string, own int) string {
	locs := nodeRefRE.FindAllStringSubmatchIndex(v, -1)
	if len(locs) == 0 {
		return shellQuote(v)
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] > last {
			b.WriteString(shellQuote(v[last:l[0]]))
		}
		k := v[l[2]:l[3]]
		if k == "" {
			k = strconv.Itoa(own)
		}
		b.WriteString(`"$node` + k + `"`)
		last = l[1]
	}
	if last < len(v) {
		b.WriteString(shellQuote(v[last:]))
	}
	return b.String()
}

func (c *Campaign) partNames() []string {
	out := make([]string, len(c.Slurm.Parts))
	for i, p := range c.Slurm.Parts {
		out[i] = p.Name
	}
	return out
}

// partSecretArgs are the parts' environments as --engine-env NAME=VALUE
// arguments, then their command lines: what a dry run hides the secrets
// of (a name that looks secret, a secret flag's value, a URL's
// credentials), with the run's.
func (c *Campaign) partSecretArgs() []string {
	var out []string
	for _, p := range c.Slurm.Parts {
		for _, k := range sortedKeys(p.Env) {
			out = append(out, "--engine-env", k+"="+p.Env[k])
		}
	}
	for _, p := range c.Slurm.Parts {
		out = append(out, p.Command...)
	}
	return out
}

// deploymentEntry is the part requests go to.
func (c *Campaign) deploymentEntry() string {
	if c.Slurm.Entry != "" {
		return c.Slurm.Entry
	}
	return c.Slurm.Parts[0].Name
}

// writeParts writes the job script's launch of the parts (after the
// agents'), each an srun step on its node with its environment before
// srun (passed to the step, never on a command line), the deployment
// file naming them, and wait_part, the wait until a part listens
// (writePartWaits calls it). step is the srun options after --nodelist
// (--overlap and the job's gres).
func (c *Campaign) writeParts(b *strings.Builder, step string) {
	b.WriteString("# The engine parts, each an srun step on its node, stopped before the agents when the job ends.\n")
	for i, p := range c.Slurm.Parts {
		for _, k := range sortedKeys(p.Env) {
			b.WriteString(k + "=" + partWord(p.Env[k], p.Node) + " ")
		}
		fmt.Fprintf(b, "srun --nodes=1 --ntasks=1 --nodelist=\"$node%d\" --job-name=%s %s", p.Node, stepPart, step)
		for _, a := range p.Command {
			b.WriteString(" " + partWord(a, p.Node))
		}
		fmt.Fprintf(b, " &\npart%d=$!\nparts=\"$parts $part%d\"\n", i+1, i+1)
	}
	b.WriteString("# The run's --deployment: the parts as servers it did not start, on the nodes the job was given.\n")
	b.WriteString("(umask 077 && cat >\"$deployment\") <<EOF || exit 1\n")
	fmt.Fprintf(b, "entry: %s\nparts:\n", heredocText(yamlString(c.deploymentEntry())))
	for _, p := range c.Slurm.Parts {
		fmt.Fprintf(b, "  - name: %s\n    role: %s\n", heredocText(yamlString(p.Name)), heredocText(yamlString(p.Role)))
		fmt.Fprintf(b, "    host: \"$node%d\"\n    url: \"http://$node%d:%d\"\n", p.Node, p.Node, p.Port)
		if p.Kind != "" {
			fmt.Fprintf(b, "    kind: %s\n", heredocText(yamlString(p.Kind)))
		}
		if p.API != "" {
			fmt.Fprintf(b, "    api: %s\n", heredocText(yamlString(p.API)))
		}
		if len(p.Devices) > 0 {
			ids := make([]string, len(p.Devices))
			for j, dev := range p.Devices {
				// The run's ID of an agent's device: the agent's name (its
				// node's, --agent NODE=URL), ':', the node's own ID.
				ids[j] = fmt.Sprintf("\"$node%d:%s\"", p.Node, dev)
			}
			fmt.Fprintf(b, "    devices: [%s]\n", strings.Join(ids, ", "))
		}
	}
	b.WriteString("EOF\n")
	fmt.Fprintf(b, "# wait_part NAME NODE PORT PID: until part NAME on NODE accepts connections on PORT, while its step PID lives (at most %d s).\n", partReadyTries/2)
	fmt.Fprintf(b, "wait_part() {\n  for _ in $(seq %d); do\n", partReadyTries)
	b.WriteString("    if timeout 5 bash -c 'exec 3<>\"/dev/tcp/$0/$1\"' \"$2\" \"$3\" 2>/dev/null; then return 0; fi\n")
	b.WriteString("    if ! kill -0 \"$4\" 2>/dev/null; then echo \"joulebench: part $1 on $2 ended before it listened on port $3 (its output is above)\" >&2; return 1; fi\n")
	fmt.Fprintf(b, "    sleep %s\n  done\n", partReadyPause)
	fmt.Fprintf(b, "  echo \"joulebench: part $1 on $2 did not listen on port $3 within %d s\" >&2\n  return 1\n}\n", partReadyTries/2)
}

// writePartWaits writes the waits until every part listens.
func (c *Campaign) writePartWaits(b *strings.Builder) {
	for i, p := range c.Slurm.Parts {
		fmt.Fprintf(b, "wait_part %s \"$node%d\" %d \"$part%d\" || exit 1\n", shellQuote(p.Name), p.Node, p.Port, i+1)
	}
}

// yamlString is s as a YAML double-quoted scalar (JSON's quoting, which
// YAML reads).
func yamlString(s string) string { return strconv.Quote(s) }

// heredocText escapes what an unquoted here-document expands ($, `, \).
func heredocText(s string) string {
	return strings.NewReplacer(`\`, `\\`, "$", `\$`, "`", "\\`").Replace(s)
}
