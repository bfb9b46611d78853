package campaign

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
)

// fakeExecutor records what the sweep asks of it.
type fakeExecutor struct {
	name string
	runs []string
}

func (f *fakeExecutor) Name() string { return f.name }
func (f *fakeExecutor) Run(_ context.Context, c *Campaign, p Plan, o Options) (Result, error) {
	for _, r := range p.Runs {
		f.runs = append(f.runs, r.ID)
	}
	return c.Collect(p, nil, o)
}
func (f *fakeExecutor) Describe(_ *Campaign, r Run, dir, _ string) (string, error) {
	return "manifest of " + r.ID + " into " + dir + " args " + strings.Join(r.Config.Args, " ") + "\n", nil
}

func TestExecutorsRegistry(t *testing.T) {
	if _, err := NewExecutors(Local{}, Slurm{}, Local{}); err == nil || !strings.Contains(err.Error(), `executor "local" registered twice`) {
		t.Errorf("duplicate: %v", err)
	}
	ex, err := NewExecutors(append(BuiltinExecutors(), &fakeExecutor{name: "kubernetes"})...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"local", "slurm", "kubernetes"} {
		if x, err := ex.Lookup(n); err != nil || x.Name() != n {
			t.Errorf("Lookup(%s) = %v, %v", n, x, err)
		}
	}
	_, err = ex.Lookup("k8s")
	if err == nil || err.Error() != `--executor "k8s": valid are kubernetes, local, slurm` || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("unknown executor: %v", err)
	}
}

// The sweep and its dry run go through the executor given: the same plan,
// and Describe's text with the secrets hidden.
func TestSweepWithAndDryRunWith(t *testing.T) {
	c, err := Load([]byte("name: x\nprofile: benchmark-1.5\nout: "+t.TempDir()+"\nmatrix:\n  engine: [{kind: sim}]\n  model: [{id: a}, {id: b}]\nargs: [--hf-endpoint, 'https://u:sk-HIDDEN@h:1']\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := c.Expand()
	f := &fakeExecutor{name: "fake"}
	var log bytes.Buffer
	if _, err := c.SweepWith(context.Background(), plan, f, Options{}, &log); err != nil {
		t.Fatal(err)
	}
	if len(f.runs) != 2 || !strings.Contains(log.String(), "executor fake") {
		t.Errorf("runs %v, log %s", f.runs, log.String())
	}
	var out bytes.Buffer
	if err := c.DryRunWith(&out, plan, "jb", f, redact.New()); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "     manifest of ") != 2 || strings.Contains(out.String(), "sk-HIDDEN") {
		t.Errorf("dry run:\n%s", out.String())
	}
}
