package workflow_test

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/workflow"
)

// The metrics and checks sections share one decoder: each must say what an
// item lacks, at the item, and reject a section that is not a list.
func TestFormulaSections(t *testing.T) {
	head := "name: t\nsteps: [{kind: mark}]\n"
	cases := []struct {
		name string
		body string
		want string // the whole error, in file order; "" for none
	}{
		{"metric without expr", "metrics:\n  - {name: m}\n", "t.yaml:1:1: metrics: a profile needs at least one metric\nt.yaml:4:5: metrics[0]: a metric needs a name and an expr"},
		{"check without name", "metrics: [{name: m, expr: \"1\"}]\nchecks:\n  - {expr: \"true\"}\n", "t.yaml:5:5: checks[0]: a check needs a name and an expr"},
		{"metrics not a list", "metrics: {name: m}\n", "t.yaml:1:1: metrics: a profile needs at least one metric\nt.yaml:3:10: metrics: expected a list, got a mapping"},
		{"checks not a list", "metrics: [{name: m, expr: \"1\"}]\nchecks: 3\n", "t.yaml:4:9: checks: expected a list, got a scalar"},
		// `checks: [{name: c, expr: "true", sevrity: warn}]`: sevrity starts at column 34.
		{"unknown key in a check", "metrics: [{name: m, expr: \"1\"}]\nchecks: [{name: c, expr: \"true\", sevrity: warn}]\n", `t.yaml:4:34: checks[0]: unknown key "sevrity" (valid keys: description, detail, expected, expr, invalidates, message, na, name, severity, when)`},
		{"metric with a bad boundary", "metrics:\n  - {name: m, expr: \"1\", boundary: gpu+gpu}\n", "t.yaml:1:1: metrics: a profile needs at least one metric\n" + `t.yaml:4:5: metrics[0]: boundary "gpu+gpu": want domains of gpu, cpu, dram, node joined by +, each once (e.g. cpu+dram)`},
		{"metric with a boundary", "metrics:\n  - {name: m, expr: \"1\", boundary: cpu+dram}\n", ""},
		{"only checks is enough", "checks: [{name: c, expr: \"true\"}]\n", ""},
	}
	reg := testRegistry(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := workflow.Load([]byte(head+c.body), "t.yaml", workflow.Options{Registry: reg})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestCheckSeverityDefaultsToWarn(t *testing.T) {
	src := "name: t\nsteps: [{kind: mark}]\nchecks:\n  - {name: a, expr: \"true\"}\n  - {name: b, expr: \"true\", severity: fail}\n"
	l, err := workflow.Load([]byte(src), "t.yaml", workflow.Options{Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	var sev []string
	for _, c := range l.Profile.Checks {
		sev = append(sev, c.Name+"="+c.Severity)
	}
	if got, want := strings.Join(sev, ","), "a="+metricdefs.SeverityWarn+",b=fail"; got != want {
		t.Errorf("severities %s, want %s", got, want)
	}
}
