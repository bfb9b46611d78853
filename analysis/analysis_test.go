package analysis

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/profiles"
)

// The archives of archive/testdata (README.md there derives every figure
// used below by hand).
const (
	sampleRun   = "../archive/testdata/sample-run"
	sampleRunOK = "../archive/testdata/sample-run-ok"
)

// noUserDirs finds the built-ins and files only.
func noUserDirs() Profiles { return Profiles{Finder: &profiles.Finder{}} }

func TestFormatParam(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{1e6, "1000000"},
		{123456789012, "123456789012"},
		{-3e7, "-30000000"},
		{0.03, "0.03"},
		{2.5e-7, "2.5e-07"},
		{1e300, "1e+300"},
	} {
		if got := FormatParam(tc.v); got != tc.want {
			t.Errorf("FormatParam(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	m := record.Meta{Parameters: map[string]any{"b": 1e6, "a": "x", "c": true}}
	if got := strings.Join(RunParamSets(m), " "); got != "a=x b=1000000 c=true" {
		t.Errorf("RunParamSets = %q", got)
	}
}

// Evaluate re-evaluates an archive with its own profile; the failed formal
// request of sample-run fails formal_requests_succeeded (exit 3), and
// sample-run-ok's figures are the README's.
func TestEvaluateArchives(t *testing.T) {
	ctx := context.Background()
	limited := 0
	p := noUserDirs()
	p.LimitMemory = func() func() { limited++; return func() {} }
	for _, tc := range []struct {
		dir        string
		tokens     float64
		checksCode int
	}{
		// 250 + 350 + 100 + 486 + 400 + 200 = 1786 tokens of the six
		// successful formal requests; f3 failed.
		{sampleRun, 1786, int(exitcode.Checks)},
		// 1786 + 50 of f3, successful here = 1836.
		{sampleRunOK, 1836, int(exitcode.OK)},
	} {
		e, err := p.Evaluate(ctx, tc.dir, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if e.EvalErr != nil {
			t.Errorf("%s: formulas failed: %v", tc.dir, e.EvalErr)
		}
		if v := fmt.Sprint(e.Results.Values["formal_output_tokens"].Value); v != fmt.Sprint(tc.tokens) {
			t.Errorf("%s: formal_output_tokens = %v, want %v", tc.dir, e.Results.Values["formal_output_tokens"].Value, tc.tokens)
		}
		if got := exitcode.Of(ChecksOutcome(e.Results)); got != tc.checksCode {
			t.Errorf("%s: checks exit %d, want %d", tc.dir, got, tc.checksCode)
		}
	}
	if limited != 2 {
		t.Errorf("LimitMemory called %d times, want once per evaluation", limited)
	}
	// 6170 J over the formal stage / 1836 tokens ≈ 3.3606 J/token.
	e, err := p.Evaluate(ctx, sampleRunOK, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Results.Values["formal_j_per_token"].Value.(float64); math.Abs(v-6170.0/1836) > 1e-9 {
		t.Errorf("formal_j_per_token = %v, want 6170/1836", v)
	}
}

func TestEvaluateRefuses(t *testing.T) {
	ctx := context.Background()
	edited := t.TempDir()
	for _, f := range []string{"run.json", "power.csv", "requests.jsonl", "engine_metrics.jsonl", "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join(sampleRunOK, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "profile.yaml" {
			b = append(b, "\n# edited\n"...)
		}
		if err := os.WriteFile(filepath.Join(edited, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, dir, profile string
		sets               []string
		want               string
	}{
		{"no archive", filepath.Join(t.TempDir(), "none"), "", nil, "none"},
		{"edited profile", edited, "", nil, "the profile was edited after the run; give --profile"},
		{"unknown profile", sampleRunOK, "no-such-profile", nil, "no-such-profile"},
		{"bad set", sampleRunOK, "", []string{"window"}, `--set "window": expected key=value`},
		{"unknown parameter", sampleRunOK, "", []string{"nope=1"}, "invalid profile:"},
	} {
		_, err := noUserDirs().Evaluate(ctx, tc.dir, tc.profile, tc.sets)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(exitcode.Invalid) {
			t.Errorf("%s: err %v (exit %d), want invalid input with %q", tc.name, err, exitcode.Of(err), tc.want)
		}
	}
	// Another profile is named on the run: the edited archive evaluates
	// with the built-in given.
	e, err := noUserDirs().Evaluate(ctx, edited, "benchmark-1.5", nil)
	if err != nil || e.Run.Meta.Profile.Name != "benchmark-1.5" {
		t.Fatalf("--profile benchmark-1.5: %v", err)
	}
}

func TestEvaluateRunsAndCompare(t *testing.T) {
	ctx := context.Background()
	var warned []string
	warn := func(dir string, _ error) { warned = append(warned, dir) }
	runs, evalErr, err := noUserDirs().EvaluateRuns(ctx, []string{sampleRun, sampleRunOK}, "", nil, warn)
	if err != nil || evalErr != nil || len(runs) != 2 || len(warned) != 0 {
		t.Fatalf("EvaluateRuns: %d runs, %v, %v, warned %v", len(runs), evalErr, err, warned)
	}
	_, _, err = noUserDirs().EvaluateRuns(ctx, []string{t.TempDir()}, "", nil, warn)
	if exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("no run under the path: %v (exit %d), want invalid", err, exitcode.Of(err))
	}
	fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
	c, err := noUserDirs().Compare(ctx, []string{sampleRunOK}, "", compare.BuiltinName, nil, fo, warn)
	if err != nil || len(c.Report.Runs) != 1 {
		t.Fatalf("Compare: %v", err)
	}
	if _, err := noUserDirs().Compare(ctx, []string{sampleRunOK}, "", "no-such-rules.yaml", nil, fo, warn); err == nil ||
		!strings.Contains(err.Error(), "invalid comparison profile") || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("bad comparison profile: %v", err)
	}
	if fig := FrontierFigure(c.Report, ""); fig.Latency != compare.DefaultLatency || len(fig.Series) != 0 {
		t.Errorf("one run has no frontier: %+v", fig)
	}
}

func TestCheckFrontierAndFormat(t *testing.T) {
	for _, tc := range []struct {
		fo   compare.FrontierOptions
		want string
	}{
		{compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}, ""},
		{compare.FrontierOptions{Latency: "bogus"}, "--latency:"},
		{compare.FrontierOptions{Latency: compare.DefaultLatency, LatencyMax: -1}, "--latency-max must not be negative"},
		{compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 1.5}, "--slo-attainment must be in [0, 1]"},
	} {
		err := CheckFrontier(tc.fo)
		if (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(exitcode.Invalid))) {
			t.Errorf("CheckFrontier(%+v) = %v, want %q", tc.fo, err, tc.want)
		}
	}
	for _, f := range []string{"table", "json", "csv", "markdown", "html"} {
		if err := CheckOutFormat(f); err != nil {
			t.Errorf("CheckOutFormat(%s): %v", f, err)
		}
	}
	if err := CheckOutFormat("pdf"); err == nil || !strings.HasSuffix(err.Error(), "(or html)") || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("CheckOutFormat(pdf) = %v", err)
	}
}

func TestReportAndPlotData(t *testing.T) {
	ctx := context.Background()
	r, err := noUserDirs().Report(ctx, []string{sampleRunOK, sampleRun}, "", true)
	if err != nil || r.EvalErr != nil || len(r.Runs) != 2 || len(r.Stages) != 2 || len(r.Pages) != 2 {
		t.Fatalf("Report: %+v, %v", r, err)
	}
	data, e, err := noUserDirs().PlotData(ctx, sampleRunOK, "", []string{"cv_max=0.5"})
	if err != nil || data == nil {
		t.Fatalf("PlotData: %v", err)
	}
	if got := e.Run.Meta.Parameters["cv_max"]; got != 0.5 {
		t.Errorf("--set cv_max=0.5 not drawn: %v", got)
	}
	_, _, err = noUserDirs().PlotData(ctx, filepath.Join(t.TempDir(), "gone"), "", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "run ") || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("PlotData of nothing: %v", err)
	}
}

func TestProfilesListShowNew(t *testing.T) {
	var b bytes.Buffer
	if err := noUserDirs().List(&b); err != nil {
		t.Fatal(err)
	}
	for _, n := range profiles.Names() {
		if !strings.Contains(b.String(), n+" ") {
			t.Errorf("List lacks %s:\n%s", n, b.String())
		}
	}
	if src, err := noUserDirs().Show("benchmark-1.5", false); err != nil || !bytes.Contains(src, []byte("name: benchmark-1.5")) {
		t.Errorf("Show: %v", err)
	}
	if _, err := noUserDirs().Show("no-such-profile", true); exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("Show of nothing: %v", err)
	}
	dir := t.TempDir()
	path, err := noUserDirs().New("mine", "benchmark-1.5", dir)
	if err != nil || path != filepath.Join(dir, "mine.yaml") {
		t.Fatalf("New: %q, %v", path, err)
	}
	p := Profiles{Finder: &profiles.Finder{Dirs: []profiles.Dir{{Path: dir, Origin: profiles.OriginPath}}}}
	if _, _, err := p.ReadLoad("mine", nil); err != nil {
		t.Errorf("the new profile does not load: %v", err)
	}
	for _, tc := range []struct{ name, parent, want string }{
		{"mine", "benchmark-1.5", "exists: never overwritten"},
		{"benchmark-1.0", "benchmark-1.5", "is a built-in profile"},
		{"../x", "benchmark-1.5", "the file becomes NAME.yaml"},
		{"other", "no-such-parent", "--extends:"},
	} {
		_, err := noUserDirs().New(tc.name, tc.parent, dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(exitcode.Invalid) {
			t.Errorf("New(%q, %q) = %v, want invalid %q", tc.name, tc.parent, err, tc.want)
		}
	}
}

func TestWriteBuiltins(t *testing.T) {
	var b bytes.Buffer
	WriteBuiltins(&b)
	for _, want := range []string{"Step kinds:\n", "\n  requests ", "Functions (besides expr's own", "\n  energy(", "\nData: run, "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("builtins lack %q:\n%s", want, b.String())
		}
	}
}

// The frontier figure draws the latency bound its points must meet on
// its axis, once; a bound on another latency is not this axis's.
func TestFrontierFigureBounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rep := &compare.Report{Frontier: []compare.FrontierPoint{
		{Model: "m", Engine: "sim", Scenario: "chat", LatencyMetric: "tpot_p50_ms", Latency: f(30), JPerToken: f(1), LatencyBound: f(50)},
		{Model: "m", Engine: "sim", Scenario: "chat", LatencyMetric: "tpot_p50_ms", Latency: f(60), JPerToken: f(0.5), LatencyBound: f(50)},
		{Model: "m", Engine: "sim", Scenario: "chat", LatencyMetric: "ttft_p99_ms", Latency: f(70), JPerToken: f(0.4), LatencyBound: f(80)},
	}}
	fig := FrontierFigure(rep, "tpot_p50_ms")
	if len(fig.Bounds) != 1 || fig.Bounds[0] != 50 {
		t.Errorf("bounds %v, want [50]", fig.Bounds)
	}
	if fig := FrontierFigure(&compare.Report{Frontier: rep.Frontier[:1:1]}, "ttft_p99_ms"); len(fig.Bounds) != 0 {
		t.Errorf("bound of another latency drawn: %v", fig.Bounds)
	}
}
