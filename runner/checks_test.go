package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
)

// Every bad input is refused before anything is created, as invalid input
// (exit 2) naming the option and what is wrong with it.
func TestRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	noPower := filepath.Join(dir, "empty-run")
	if err := os.Mkdir(noPower, 0o755); err != nil {
		t.Fatal(err)
	}
	given := func(names ...string) func(string) bool {
		return func(f string) bool {
			for _, n := range names {
				if n == f {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"empty engine url", func(s *Spec) { s.Changed = given("engine-url") }, "--engine-url is empty"},
		{"engine url scheme", func(s *Spec) { s.Engine.URL = "ftp://h" }, `--engine-url: scheme "ftp"`},
		{"engine url host", func(s *Spec) { s.Engine.URL = "http://:80" }, "--engine-url: no host"},
		{"engine url port", func(s *Spec) { s.Engine.URL = "http://h:99999" }, "--engine-url: port 99999"},
		{"engine url empty port", func(s *Spec) { s.Engine.URL = "http://h:" }, "--engine-url: empty port"},
		{"engine url not a url", func(s *Spec) { s.Engine.URL = "http://h\x7f" }, "--engine-url: not a URL"},
		{"port", func(s *Spec) { s.Engine.Port = 70000 }, "--port 70000"},
		{"dataset format", func(s *Spec) { s.Dataset.Format = "xml" }, `--dataset-format "xml"`},
		{"extra body", func(s *Spec) { s.ExtraBody = "[1]" }, "--extra-body"},
		{"replay missing", func(s *Spec) { s.Replay = filepath.Join(dir, "none.csv") }, "--replay"},
		{"replay dir without power", func(s *Spec) { s.Replay = noPower }, "a run directory without power.csv"},
		{"baseline", func(s *Spec) { s.Baseline = noPower }, "--baseline"},
		{"image digest", func(s *Spec) { s.ImageDigest = "latest" }, `--image-digest "latest"`},
		{"sim preset", func(s *Spec) { s.Engine.Settings = engines.Settings{"sim-preset": "bogus"} }, `--sim-preset "bogus": want drift, no-release, small-batch, prefix-cache or disaggregated`},
		{"engine kind", func(s *Spec) { s.Engines = []string{"bogus"} }, `"bogus"`},
		{"sim with url", func(s *Spec) { s.Engines, s.EngineGiven, s.Engine.URL = []string{"sim"}, true, "http://h:1" }, "cannot be combined with --engine-url"},
		{"flag not for sim", func(s *Spec) { s.Engine.TP, s.Changed = 2, given("tp") }, "--tp does not apply to --engine sim"},
		{"model kind", func(s *Spec) { s.Engine.Models = []string{"nokind=m"} }, `"nokind" is not an engine kind`},
		{"models twice", func(s *Spec) { s.Engine.Models = []string{"a", "b"} }, "--model given 2 times"},
		{"model kind twice", func(s *Spec) { s.Engine.Models = []string{"sim=a", "sim=b"} }, "--model sim= given twice"},
		{"model of another engine", func(s *Spec) { s.Engine.Models = []string{"vllm=m"} }, "the run has no engine vllm"},
		{"engine env", func(s *Spec) {
			s.Engines, s.Engine.Models, s.Engine.EnvVars = []string{"vllm"}, []string{"m"}, []string{"NOVALUE"}
		}, `--engine-env "NOVALUE"`},
		{"vllm without model", func(s *Spec) { s.Engines = []string{"vllm"} }, "needs --model"},
		{"url with several engines", func(s *Spec) { s.Engines, s.Engine.URL = []string{"sim", "sim"}, "http://h:1" }, "--engine-url benchmarks one server"},
		{"url with a sweep of several", func(s *Spec) {
			s.Engines, s.Engine.URL, s.Sweep = []string{"sim", "sim"}, "http://h:1", "request_count"
		}, "--engine-url benchmarks one server"},
		{"output file with several", func(s *Spec) { s.Engines, s.OutputFile = []string{"sim", "sim"}, "x.json" }, "--output-file writes one run's results"},
		{"output file with a sweep", func(s *Spec) { s.Sweep, s.OutputFile = "request_count", "x.json" }, "--output-file writes one run's results"},
		{"format with several", func(s *Spec) { s.Engines, s.Format = []string{"sim", "sim"}, "yaml" }, `"yaml"`},
		{"format with a sweep", func(s *Spec) { s.Sweep, s.Format = "request_count", "yaml" }, `"yaml"`},
		{"flag for no engine", func(s *Spec) { s.Engines, s.Engine.TP, s.Changed = []string{"sim", "sim"}, 2, given("tp") }, "engine sim: --tp does not apply"},
		{"label", func(s *Spec) { s.Labels = []string{"nokey"} }, `--label "nokey"`},
		{"model params", func(s *Spec) { s.ModelParams = "big" }, `--model-params "big"`},
		{"set", func(s *Spec) { s.Sets = []string{"novalue"} }, `--set "novalue"`},
		{"set unknown parameter", func(s *Spec) { s.Sets = []string{"nope=1"} }, "invalid profile"},
		{"profile", func(s *Spec) { s.Profile = filepath.Join(dir, "none.yaml") }, "none.yaml"},
		{"profile of several", func(s *Spec) { s.Engines, s.Profile = []string{"sim", "sim"}, filepath.Join(dir, "none.yaml") }, "none.yaml"},
		{"sweep parameter", func(s *Spec) { s.Sweep = "nope" }, `--sweep nope: the profile has no parameter "nope"`},
		{"sweep without a list", func(s *Spec) { s.Sweep = "concurrency" }, "declare the string parameter sweep_concurrency"},
		{"sweep values", func(s *Spec) { s.Sweep = "concurrency=," }, "--sweep concurrency=,: no values"},
		{"sweep value type", func(s *Spec) { s.Sweep = "concurrency=two" }, "invalid profile"},
		{"sweep value name", func(s *Spec) { s.Sweep = "metrics_families=../x" }, "--sweep metrics_families value"},
		{"sweep flag for no engine", func(s *Spec) {
			s.Sweep, s.Engines, s.Engine.TP, s.Changed = "request_count", []string{"sim", "sim"}, 2, given("tp")
		}, "--tp does not apply"},
		{"sweep flag", func(s *Spec) { s.Sweep, s.Engine.TP, s.Changed = "request_count", 2, given("tp") }, "--tp does not apply"},
		{"load option", func(s *Spec) { s.Load = LoadOptions{Rate: 4, RateSet: true} }, "--request-rate: profile tiny has no parameter rate"},
		{"load option profile", func(s *Spec) {
			s.Load, s.Profile = LoadOptions{Rate: 4, RateSet: true}, filepath.Join(dir, "none.yaml")
		}, "none.yaml"},
		{"output check", func(s *Spec) { s.CheckOutput = func() error { return Invalidf("--format: bad") } }, "--format: bad"},
		{"telemetry check", func(s *Spec) {
			s.CheckTelemetry = func(sim bool) error {
				if sim {
					return Invalidf("--telemetry: bad for the simulator")
				}
				return nil
			}
		}, "--telemetry: bad for the simulator"},
		{"file limit", func(s *Spec) { s.FileLimit = &fakeLimit{soft: 10, hard: 10} }, "needs about"},
		{"steady state infeasible", func(s *Spec) { s.Profile, s.Sets = "benchmark-1.5", []string{"request_count=10"} }, "steady state can never be reached"},
		{"random dataset", func(s *Spec) {
			s.Dataset = DatasetOptions{Name: "random", RandomRangeRatio: 2, RandomRangeRatioSet: true}
		}, "range"},
		{"hub dataset", func(s *Spec) { s.Dataset = DatasetOptions{Name: "hf:nopath"} }, "hf:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var msgs syncBuffer
			s := testSpec(t, &msgs)
			s.Profile = filepath.Join(wd, tinyProfile)
			tc.edit(&s)
			_, err := Run(context.Background(), s)
			if err == nil || CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (code %d), want code %d with %q", err, CodeOf(err), CodeInvalid, tc.want)
			}
			if ents, _ := os.ReadDir("."); len(ents) > 0 {
				t.Errorf("%s was created", ents[0].Name())
			}
		})
	}
}

// wd is the package directory, where testdata is (tests that change
// directory name the profile from it).
var wd = func() string { d, _ := os.Getwd(); return d }()

// The error's exit code is the first in its chain that has one; plain
// errors are failures.
func TestCodeOf(t *testing.T) {
	inner := Invalidf("bad")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("x"), CodeFailure},
		{inner, CodeInvalid},
		{WithCode(CodeChecks, inner), CodeChecks},
		{errors.Join(errors.New("x"), WithCode(CodeEval, errors.New("y"))), CodeEval},
	} {
		if got := CodeOf(tc.err); got != tc.want {
			t.Errorf("%v: code %d, want %d", tc.err, got, tc.want)
		}
	}
	if WithCode(CodeFailure, nil) != nil {
		t.Error("WithCode(nil) is not nil")
	}
}

// New needs a way to find profiles.
func TestNewNeedsFindProfile(t *testing.T) {
	if _, err := Run(context.Background(), Spec{}); err == nil {
		t.Error("no FindProfile: no error")
	}
}

// A baseline is evaluated with the profile under test and refused when it
// differs from the run in what is compared, unless forced.
func TestLoadBaseline(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	var rep Report
	s.Report = func(_ context.Context, r Report) error { rep = r; return nil }
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := LoadBaseline(ctx, s.Out, rep.Loaded, rep.Run.Meta, false)
	if err != nil || b.Dir != s.Out || b.Values == nil || b.Results == nil {
		t.Fatalf("baseline %+v, %v", b, err)
	}
	other := rep.Run.Meta
	other.Engine.Model = "another"
	if _, err := LoadBaseline(ctx, s.Out, rep.Loaded, other, false); CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), `model differs: "another" here`) {
		t.Errorf("other model: %v", err)
	}
	if _, err := LoadBaseline(ctx, s.Out, rep.Loaded, other, true); err != nil {
		t.Errorf("forced: %v", err)
	}
	if _, err := LoadBaseline(ctx, filepath.Join(s.Out, "none"), rep.Loaded, other, true); CodeOf(err) != CodeInvalid {
		t.Errorf("no archive: %v", err)
	}
	// A run gated on a baseline names it; its Report hook gates.
	s.Baseline, s.Out = s.Out, filepath.Join(t.TempDir(), "run")
	if _, err := Run(ctx, s); err != nil {
		t.Errorf("run with a baseline: %v", err)
	}
	if _, err := archive.Load(s.Out); err != nil {
		t.Error(err)
	}
}
