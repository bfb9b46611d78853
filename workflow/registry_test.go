package workflow_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// tdeps are the dependencies of the test's step kinds: a log of calls.
type tdeps struct{ calls []string }

type echoConfig struct {
	Say  string `yaml:"say"`
	Fail bool   `yaml:"fail"`
}

func (c *echoConfig) Validate() error {
	if c.Say == "" {
		return errors.New("say must not be empty")
	}
	return nil
}

type noConfig struct{}

func testRegistry(t *testing.T) *workflow.Registry[*tdeps] {
	t.Helper()
	echo := workflow.NewStepKind("echo", "append say to the log",
		func() *echoConfig { return &echoConfig{Say: "default"} },
		func(_ context.Context, _ *workflow.RunContext, d *tdeps, c *echoConfig) error {
			d.calls = append(d.calls, c.Say)
			if c.Fail {
				return errors.New("told to fail")
			}
			return nil
		})
	mark := workflow.NewStepKind("mark", "append mark to the log",
		func() *noConfig { return &noConfig{} },
		func(_ context.Context, _ *workflow.RunContext, d *tdeps, _ *noConfig) error {
			d.calls = append(d.calls, "mark")
			return nil
		})
	r, err := workflow.NewRegistry(echo, mark)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryDescriptors(t *testing.T) {
	r := testRegistry(t)
	if got := strings.Join(r.Names(), ","); got != "echo,mark" {
		t.Errorf("Names = %s, want echo,mark", got)
	}
	k, ok := r.Lookup("echo")
	if !ok || k.Doc != "append say to the log" {
		t.Fatalf("Lookup(echo) = %+v, %v", k, ok)
	}
	cfg, ok := r.NewConfig("echo")
	if c, isEcho := cfg.(*echoConfig); !ok || !isEcho || c.Say != "default" {
		t.Errorf("NewConfig(echo) = %#v, %v; want the defaults", cfg, ok)
	}
	if a, _ := r.NewConfig("echo"); a == cfg {
		t.Error("NewConfig must return a fresh configuration each call")
	}
	if _, ok := r.NewConfig("nope"); ok {
		t.Error("NewConfig(nope) found a kind")
	}
	// The run function gets the typed configuration; another type is an
	// error naming both, never a panic.
	d := &tdeps{}
	if err := k.Run(context.Background(), nil, d, &echoConfig{Say: "hi"}); err != nil || strings.Join(d.calls, ",") != "hi" {
		t.Errorf("Run = %v, calls %v", err, d.calls)
	}
	err := k.Run(context.Background(), nil, d, &noConfig{})
	if err == nil || !strings.Contains(err.Error(), "*workflow_test.noConfig") || !strings.Contains(err.Error(), "*workflow_test.echoConfig") {
		t.Errorf("wrong config type: %v", err)
	}

	dup := workflow.NewStepKind("echo", "", func() *noConfig { return &noConfig{} },
		func(context.Context, *workflow.RunContext, *tdeps, *noConfig) error { return nil })
	if err := r.Register(dup); err == nil || !strings.Contains(err.Error(), `"echo" registered twice`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := workflow.NewRegistry(workflow.StepKind[*tdeps]{Name: "bare"}); err == nil {
		t.Error("a kind without config or run function was registered")
	}
	noRun := workflow.NewStepKind[*tdeps, noConfig]("norun", "", func() *noConfig { return &noConfig{} }, nil)
	if err := r.Register(noRun); err == nil {
		t.Error("a kind without run function was registered")
	}
}

const execProfile = `name: t
parameters:
  loud: false
steps:
  - {kind: echo, with: {say: one}}
  - {kind: mark, when: loud}
  - {kind: echo, name: second}
  - {kind: echo, with: {say: three, fail: true}}
  - {kind: mark}
metrics:
  - {name: m, expr: "1"}
`

func execRC(t *testing.T, src string, reg workflow.StepConfigs, overrides map[string]string) *workflow.RunContext {
	t.Helper()
	l, err := workflow.Load([]byte(src), "t.yaml", workflow.Options{Registry: reg, Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.Create(filepath.Join(t.TempDir(), "run"), record.Meta{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &workflow.RunContext{Clock: workflow.NewClock(), Out: w, Log: zerolog.Nop(), Loaded: l, Engine: "sim"}
}

func TestExecute(t *testing.T) {
	reg := testRegistry(t)
	cases := []struct {
		name      string
		overrides map[string]string
		calls     string
	}{
		// when: loud is false, so the first mark is skipped; the fourth
		// step fails and the fifth never runs.
		{"when false skips", nil, "one,default,three"},
		{"when true runs", map[string]string{"loud": "true"}, "one,mark,default,three"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := execRC(t, execProfile, reg, c.overrides)
			d := &tdeps{}
			err := workflow.Execute(context.Background(), rc, reg, d)
			if err == nil || err.Error() != "step 4 (echo): told to fail" {
				t.Errorf("err = %v, want the failing step named", err)
			}
			if got := strings.Join(d.calls, ","); got != c.calls {
				t.Errorf("calls = %s, want %s", got, c.calls)
			}
		})
	}

	t.Run("cancelled before a step", func(t *testing.T) {
		rc := execRC(t, execProfile, reg, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		d := &tdeps{}
		err := workflow.Execute(ctx, rc, reg, d)
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "step 1 (echo)") || len(d.calls) > 0 {
			t.Errorf("err = %v, calls %v", err, d.calls)
		}
	})
	t.Run("kind missing from the run's registry", func(t *testing.T) {
		rc := execRC(t, execProfile, reg, nil)
		echoOnly, err := workflow.NewRegistry(workflow.NewStepKind("echo", "", func() *echoConfig { return &echoConfig{} },
			func(context.Context, *workflow.RunContext, *tdeps, *echoConfig) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		err = workflow.Execute(context.Background(), rc, echoOnly, &tdeps{})
		if err == nil || !strings.Contains(err.Error(), `step 5 (mark): no implementation for step kind "mark"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestLoadDecodesWithIntoTheKindsConfig(t *testing.T) {
	reg := testRegistry(t)
	src := "name: t\nsteps:\n  - {kind: echo, with: {say: \"\"}}\n  - {kind: echo, with: {sya: x}}\n  - {kind: nope}\nmetrics:\n  - {name: m, expr: \"1\"}\n"
	_, err := workflow.Load([]byte(src), "t.yaml", workflow.Options{Registry: reg})
	want := []string{
		// "  - {kind: echo, with: {": kind's value starts at column 12,
		// with's mapping at column 24, where Validate's error points.
		`t.yaml:3:24: steps[0] (echo).with: say must not be empty`,
		// the unknown key sya is one past the brace: column 25.
		`t.yaml:4:25: steps[1] (echo).with: unknown key "sya" (valid keys: fail, say)`,
		`t.yaml:5:12: steps[2] (nope): unknown step kind "nope" (known kinds: echo, mark)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
