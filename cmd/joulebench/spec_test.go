package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/runner/runflags"
)

// isolateConfig keeps the user's configuration file out of a test, and
// sets one value through the environment, which the run command and a
// campaign's settings both read (JOULEBENCH_SEED).
func isolateConfig(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("JOULEBENCH_SEED", "9")
}

// runCommandSettings are the settings the run command builds from a
// command line (`run ARGS...`), as its RunE does before it runs them.
func runCommandSettings(t *testing.T, args ...string) runflags.Settings {
	t.Helper()
	a, run := parsedRun(t, args...)
	s, err := a.runSettings(run, run.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// parsedRun is a fresh app's run command with args parsed and set up (the
// configuration read, the redactor built), as before its RunE.
func parsedRun(t *testing.T, args ...string) (*app, *cobra.Command) {
	t.Helper()
	a := newApp(io.Discard, io.Discard)
	run, _, err := a.root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := a.setup(run); err != nil {
		t.Fatal(err)
	}
	return a, run
}

// specFlagLists are run flags of every kind: engines and their options,
// secrets, the load, the request set, power sources, GPU settings.
var specFlagLists = [][]string{
	nil,
	{"--engine", "vllm", "--model", "org/m", "--tp", "2", "--api-key", "k3y", "--engine-env", "HF_TOKEN=t0k", "--engine-arg=--dtype=bf16", "--engine-url", "http://u:pw@127.0.0.1:1"},
	{"--request-rate", "inf", "--burstiness", "0.5", "--num-prompts", "10", "--set", "window=5", "--label", "a=b", "--extra-body", `{"think": false}`},
	{"--telemetry", "nvml", "--gpus", "0", "--dcgm-url", "http://h:9400/metrics", "--gpu-power-limit", "250", "--scrape-interval", "2s"},
	{"--engine", "sim", "--sim-preset", "small-batch", "--dataset", "random", "--random-input-len", "64", "--random-range-ratio", "0.2", "--runs", "2", "--quick=false"},
}

// The settings a campaign builds for a run are the settings the run
// command builds from the same flags (its configuration and environment
// included): a campaign's run given --spec runs what `run PROFILE FLAGS`
// would have.
func TestCampaignSpecEqualsRunSpec(t *testing.T) {
	isolateConfig(t)
	dir := t.TempDir()
	for i, flags := range specFlagLists {
		src := "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {}\nargs: [" + yamlList(flags) + "]\n"
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		a := newApp(io.Discard, io.Discard)
		c, err := a.campaignLoader().ReadFile(path)
		if err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
		r := c.Expand().Runs[0]
		if r.SpecErr != nil {
			t.Fatalf("list %d: %v", i, r.SpecErr)
		}
		want := runCommandSettings(t, append([]string{"benchmark-1.5"}, r.Config.Args...)...)
		if !reflect.DeepEqual(r.Spec, want) {
			t.Errorf("list %d %q: the campaign's settings\n%+v\nthe run command's\n%+v", i, flags, r.Spec, want)
		}
		if r.Spec.Seed != 9 {
			t.Errorf("list %d: seed %d, want 9 from JOULEBENCH_SEED", i, r.Spec.Seed)
		}
	}
}

func yamlList(flags []string) string {
	q := make([]string, len(flags))
	for i, f := range flags {
		q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}

// `run --spec FILE` runs the settings the flags would have given: the
// file (without its secrets) and the secrets from the command line and
// environment, as a campaign passes them, give the same settings.
func TestRunSpecFileEqualsFlags(t *testing.T) {
	isolateConfig(t)
	for i, flags := range specFlagLists {
		want := runCommandSettings(t, append([]string{"benchmark-1.5"}, flags...)...)
		b, err := runflags.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "run.spec.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		// The secrets: the scalars through the environment, the lists as
		// flags (main puts JOULEBENCH_SECRET_ARGS back as flags).
		args := []string{"--spec", path, "--out", "d", "--no-progress"}
		for _, kv := range [][2]string{{"JOULEBENCH_API_KEY", want.APIKey}, {"JOULEBENCH_ENGINE_URL", want.EngineURL}, {"JOULEBENCH_EXTRA_BODY", want.ExtraBody}} {
			t.Setenv(kv[0], kv[1])
		}
		for _, f := range [][2]string{{"engine-env", ""}, {"engine-arg", ""}, {"dcgm-url", ""}} {
			var vals []string
			switch f[0] {
			case "engine-env":
				vals = want.EngineEnv
			case "engine-arg":
				vals = want.EngineArgs
			case "dcgm-url":
				vals, _ = want.Telemetry["dcgm-url"].([]string)
			}
			for _, v := range vals {
				args = append(args, "--"+f[0]+"="+v)
			}
		}
		got := runCommandSettings(t, args...)
		want.Out, want.NoProgress = "d", true
		if !reflect.DeepEqual(got, want) {
			t.Errorf("list %d %q: --spec gave\n%+v\nthe flags\n%+v", i, flags, got, want)
		}
	}
}

// A flag given with --spec is refused, naming it (the spec file holds
// every run flag); so are a profile argument and a spec file with a field
// it does not know, naming the file.
func TestRunSpecRefuses(t *testing.T) {
	isolateConfig(t)
	t.Chdir(t.TempDir())
	b, err := runflags.Marshal(runCommandSettings(t, "benchmark-1.5", "--engine", "sim"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("good.json", b, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"version": 1,`, `"version": 1, "bogus": true,`, 1)
	if err := os.WriteFile("bad.json", []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", "good.json", "--engine", "vllm", "--set", "a=1"}, "--spec good.json: --engine, --set cannot be given with it"},
		{[]string{"--spec", "good.json", "--log-level", "debug"}, "--log-level cannot be given with it"},
		{[]string{"--spec", "good.json", "--model", "m", "--deployment", "d.yaml"},
			"--model cannot be given with it: the spec file holds every run flag (only --out, --no-progress, where power is read (--telemetry, --agent), the engine parts (--deployment) and the secrets may be given with --spec)"},
		{[]string{"--spec", "good.json", "benchmark-1.5"}, `run --spec takes no PROFILE argument ("benchmark-1.5")`},
		{[]string{"--spec", "bad.json"}, `spec bad.json: json: unknown field "bogus"`},
		{[]string{"--spec", "none.json"}, "none.json"},
	} {
		_, errOut, code := runCLI(t, append([]string{"run"}, tc.args...)...)
		if code != exitInvalid || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", tc.args, code, exitInvalid, tc.want, errOut)
		}
		if _, err := os.Stat("runs"); err == nil {
			t.Fatalf("%q: a run directory was created", tc.args)
		}
	}
}

// A Slurm job over several nodes that started the engine parts gives its
// run, besides the spec, where it reads power and the deployment file it
// wrote on its node: both are taken, over the spec's, and count as given.
func TestRunSpecTakesWhereTheJobRuns(t *testing.T) {
	isolateConfig(t)
	t.Chdir(t.TempDir())
	b, err := runflags.Marshal(runCommandSettings(t, "benchmark-1.5", "--engine", "sim"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("good.json", b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := runCommandSettings(t, "--spec", "good.json", "--out", "d", "--no-progress", "--deployment", "slurm/x.deployment.yaml",
		"--telemetry", "agent", "--agent", "http://n1:4780")
	if s.Deployment != "slurm/x.deployment.yaml" || !slices.Contains(s.Changed, "deployment") {
		t.Errorf("deployment %q, changed %v: want the job's file, given", s.Deployment, s.Changed)
	}
	if a, _ := s.Telemetry["agent"].([]string); len(a) != 1 || a[0] != "http://n1:4780" {
		t.Errorf("agents %v", s.Telemetry["agent"])
	}
}
