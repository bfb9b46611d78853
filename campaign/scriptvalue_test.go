package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// yamlDQ is s as a YAML double-quoted scalar (\n, \r, \0 escaped).
func yamlDQ(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\x00", `\0`).Replace(s) + `"`
}

// posOf is the line and column where %s starts in a template: where the
// value written there starts (counted by hand from the text, not by the
// loader).
func posOf(tmpl string) (int, int) {
	i := strings.Index(tmpl, "%s")
	line := strings.Count(tmpl[:i], "\n") + 1
	col := i - strings.LastIndex(tmpl[:i], "\n")
	return line, col
}

// Every value that reaches a job script, a Job manifest or a shell is
// refused, at its position, when it holds a newline, a carriage return or
// a NUL; the values written unquoted into an #SBATCH line also when they
// hold ';', "$(", '`' or a quote. One template per value: %s is where the
// hostile value goes, prefix is what the value starts with (a gres needs
// its ':').
func TestHostileValuesRefused(t *testing.T) {
	const head = "name: t\nprofile: benchmark-1.5\n"
	const mx = "out: out\nmatrix:\n  model: [{id: a}]\n"
	const nodes = "slurm:\n  nodes: 2\n  "
	const part = "parts:\n    - {name: p, role: replica, node: 2, port: 8100, kind: openai, "
	for _, tc := range []struct {
		where, tmpl, prefix string
		unquoted            bool
	}{
		{"slurm.partition", head + mx + "slurm:\n  partition: %s\n", "gpu", true},
		{"slurm.gres", head + mx + "slurm:\n  gres: %s\n", "gpu:1", true},
		{"slurm.time", head + mx + "slurm:\n  time: %s\n", "10", true},
		{"slurm.options[1]", head + mx + "slurm:\n  options: [--account=abc, %s]\n", "--qos=high", true},
		{"slurm.options[0]", head + mx + "slurm:\n  options: [%s]\n", "--constraint=a100", true},
		{"slurm.joulebench", head + mx + "slurm:\n  joulebench: %s\n", "/opt/jb", false},
		{"slurm.agent.telemetry", head + mx + nodes + "agent:\n    telemetry: %s\n", "dcgm", false},
		{"slurm.agent.args[1]", head + mx + nodes + "agent:\n    args: [--dcgm-url, %s]\n", "http://h:9400", false},
		{"slurm.parts[0].command[1]", head + mx + nodes + part + "command: [vllm, %s]}\n", "serve", false},
		{"slurm.parts[0].env.HF_HOME", head + mx + nodes + part + "command: [vllm], env: {HF_HOME: %s}}\n", "/data", false},
		{"slurm.parts[0].api", head + mx + nodes + part + "command: [vllm], api: %s}\n", "openai", false},
		{"out", head + "out: %s\nmatrix:\n  model: [{id: a}]\n", "out", false},
		{"args[1]", head + mx + "args: [--seed, %s]\n", "1", false},
		{"matrix.model[0].id", head + "out: out\nmatrix:\n  model: [{name: m, id: %s}]\n", "org/m", false},
		{"matrix.engine[0].args[1]", head + mx + "  engine: [{kind: sim, args: [--engine-arg, %s]}]\n", "x", false},
		{"matrix.scenario[0].dataset", head + mx + "  scenario: [{name: s, dataset: %s}]\n", "d.jsonl", false},
		{"matrix.load[0].set.concurrency", head + mx + "  load: [{name: c1, set: {concurrency: %s}}]\n", "1", false},
		{"matrix.set.temperature[0]", head + mx + "  set: {temperature: [%s]}\n", "0", false},
		{"kubernetes.namespace", head + mx + "kubernetes:\n  namespace: %s\n", "bench", false},
		{"kubernetes.tolerations[0].value", head + mx + "kubernetes:\n  tolerations: [{key: gpu, value: %s, effect: NoSchedule}]\n", "yes", false},
		{"kubernetes.node_selector.pool", head + mx + "kubernetes:\n  node_selector: {pool: %s}\n", "gpu", false},
		{"kubernetes.service_account", head + mx + "kubernetes:\n  service_account: %s\n", "runner", false},
		{"kubernetes.pvc", head + mx + "kubernetes:\n  pvc: %s\n", "archives", false},
	} {
		hostile := []string{"\ntouch /tmp/pwned", "\rwhoami", "\x00x"}
		if tc.unquoted {
			hostile = append(hostile, ";touch x", "$(whoami)", "`whoami`", "'x'", `"x"`)
		}
		line, col := posOf(tc.tmpl)
		want := fmt.Sprintf("c.yaml:%d:%d: %s: ", line, col, tc.where)
		// The clean value loads (the template itself is valid).
		if _, err := Load([]byte(fmt.Sprintf(tc.tmpl, yamlDQ(tc.prefix))), filepath.Join(t.TempDir(), "c.yaml")); err != nil {
			t.Errorf("%s = %q: %v", tc.where, tc.prefix, err)
			continue
		}
		for _, h := range hostile {
			v := tc.prefix + h
			_, err := Load([]byte(fmt.Sprintf(tc.tmpl, yamlDQ(v))), filepath.Join(t.TempDir(), "c.yaml"))
			if err == nil {
				t.Errorf("%s = %q: loaded", tc.where, v)
				continue
			}
			if !strings.Contains(err.Error(), want+fmt.Sprintf("%q", v)) {
				t.Errorf("%s = %q: error\n%v\nwant one starting %s%q", tc.where, v, err, want, v)
			}
		}
	}
}

// A campaign changed after it was loaded is checked again before a job
// script is shown or submitted: the dry run refuses it, and sbatch is
// never called.
func TestHostileValueNeverReachesScript(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}]\nslurm: {poll: 10ms}\n")
	c.Slurm.Partition = "gpu\ntouch /tmp/pwned"
	r := c.Expand().Runs[0]
	if d, err := (Slurm{}).Describe(c, r, "d", "jb"); err == nil || !strings.Contains(err.Error(), `slurm.partition: "gpu\ntouch /tmp/pwned" holds a newline`) {
		t.Errorf("Describe: %v\n%s", err, d)
	}
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	_, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb"}, f.run)
	if err == nil || !strings.Contains(err.Error(), "slurm.partition") {
		t.Errorf("RunSlurm: %v", err)
	}
	for _, call := range f.calls {
		if strings.HasPrefix(call, "sbatch") {
			t.Errorf("sbatch called: %s", call)
		}
	}
	c.Slurm.Partition = ""
	if _, err := (Slurm{}).Describe(c, r, "d", "/opt/jb\nwhoami"); err == nil || !strings.Contains(err.Error(), "holds a newline") {
		t.Errorf("Describe with a bad executable: %v", err)
	}
}

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		v    string
		use  ValueUse
		want string // "" = accepted
	}{
		{"gpu", Unquoted, ""},
		{"--constraint=a100&nvlink", Unquoted, ""},
		{"a b", Unquoted, `holds " "`},
		{"a\tb", Quoted, ""},
		{"a\tb", Unquoted, `holds "\t"`},
		{"it's", Quoted, ""},
		{"it's", Unquoted, `holds "'"`},
		{"$(id)", Quoted, ""},
		{"$(id)", Unquoted, `holds "$"`},
		{"a\x1bb", Quoted, "control character U+001B"},
		{"a\nb", Quoted, "newline"},
		{"a\rb", Quoted, "carriage return"},
		{"a\x00b", Quoted, "NUL"},
	} {
		err := CheckValue(tc.v, tc.use)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckValue(%q, %d): %v", tc.v, tc.use, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckValue(%q, %d) = %v, want %q", tc.v, tc.use, err, tc.want)
		}
	}
}
