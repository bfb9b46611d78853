package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

func TestCheckView(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		in     View
		format string // after the check
		err    string // "": valid
	}{
		{"default table", View{}, report.FormatTable, ""},
		{"json to a file", View{Format: "json", File: filepath.Join(dir, "r.json")}, "json", ""},
		{"bad format", View{Format: "pdf"}, "pdf", "--format: "},
		{"no such directory", View{File: filepath.Join(dir, "none", "r.json")}, report.FormatTable,
			"--output-file " + filepath.Join(dir, "none", "r.json") + ": directory " + filepath.Join(dir, "none") + " does not exist"},
		{"a directory", View{File: dir}, report.FormatTable, "--output-file " + dir + ": is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := CheckView(tc.in)
			if v.Format != tc.format {
				t.Errorf("format %q, want %q", v.Format, tc.format)
			}
			if tc.err == "" {
				if err != nil {
					t.Errorf("err %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || exitcode.Of(err) != int(exitcode.Invalid) {
				t.Errorf("err %v (exit %d), want invalid %q", err, exitcode.Of(err), tc.err)
			}
		})
	}
}

// The summary shows the metrics marked summary: always, and those marked
// applicable only when they have a value; each check's message and
// expectation come along.
func TestSummarySpec(t *testing.T) {
	l := &workflow.Loaded{Profile: &workflow.Profile{
		Metrics: []workflow.MetricDecl{{Name: "a", Summary: workflow.SummaryAlways}, {Name: "b"},
			{Name: "c", Summary: workflow.SummaryApplicable}, {Name: "d", Summary: workflow.SummaryNever}},
		Checks: []workflow.CheckDecl{{Name: "k", Message: "too few", Expected: "on a laptop"}},
	}}
	spec := SummarySpec(l, "hint")
	if strings.Join(spec.Metrics, ",") != "a,c" || strings.Join(spec.WhenApplicable, ",") != "c" || spec.Hint != "hint" {
		t.Errorf("spec %+v, want metrics a,c (c when applicable) and the hint", spec)
	}
	if n := spec.Checks["k"]; n.Message != "too few" || n.Expected != "on a laptop" || len(spec.Checks) != 1 {
		t.Errorf("checks %+v", spec.Checks)
	}
	if spec := SummarySpec(nil, "h"); len(spec.Metrics) != 0 || spec.Checks == nil || spec.Hint != "h" {
		t.Errorf("no profile: %+v", spec)
	}
}

// ShowResults on sample-run-ok (archive/testdata/README.md): formal
// energy per output token 6170 J / 1836 tokens = 3.36056… J/token.
func TestShowResults(t *testing.T) {
	e, err := noUserDirs().Evaluate(context.Background(), sampleRunOK, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		v         View
		has       []string // in what is shown
		last      string   // the last line shown
		fileJSON  bool     // the file holds the results as JSON
		fileLines string   // the file's first line, when CSV
	}{
		{"summary", View{Format: "table", Hint: "every value: here"}, []string{"formal_j_per_token               3.3606 J/token"}, "every value: here", false, ""},
		{"summary and a JSON file", View{Format: "table", Hint: "h", File: filepath.Join(dir, "a.json")}, []string{"3.3606 J/token"},
			"results (table): " + filepath.Join(dir, "a.json"), true, ""},
		{"all as csv", View{Format: "csv", All: true}, []string{"formal_j_per_token,metric,3.3606"}, "", false, ""},
		{"csv to a file only", View{Format: "csv", File: filepath.Join(dir, "b.csv")}, nil, "results (csv): " + filepath.Join(dir, "b.csv"), false, "name,kind,value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			if err := ShowResults(&w, e.Run, e.Loaded, e.Results, tc.v); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(w.String(), s) {
					t.Errorf("lacks %q:\n%s", s, w.String())
				}
			}
			lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
			if tc.last != "" && lines[len(lines)-1] != tc.last {
				t.Errorf("last line %q, want %q", lines[len(lines)-1], tc.last)
			}
			if tc.v.File == "" {
				return
			}
			b, err := os.ReadFile(tc.v.File)
			if err != nil {
				t.Fatal(err)
			}
			if tc.fileJSON {
				var doc map[string]struct{ Value any }
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatalf("file is not JSON: %v\n%s", err, b)
				}
				if v, _ := doc["formal_j_per_token"].Value.(float64); math.Abs(v-6170.0/1836) > 1e-9 {
					t.Errorf("file's formal_j_per_token %v, want 6170/1836\n%s", v, b)
				}
			}
			if tc.fileLines != "" && !strings.HasPrefix(string(b), tc.fileLines) {
				t.Errorf("file starts %q, want %q", b[:min(len(b), 40)], tc.fileLines)
			}
			if tmp, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(tmp) != 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
	// A file that cannot be written is an error naming the flag.
	err = ShowResults(&bytes.Buffer{}, e.Run, e.Loaded, e.Results, View{Format: "json", File: filepath.Join(dir, "none", "c.json")})
	if err == nil || !strings.HasPrefix(err.Error(), "--output-file: ") {
		t.Errorf("unwritable file: %v", err)
	}
}

// ShowRun exits as analyze: sample-run's failed formal request fails
// formal_requests_succeeded (Checks), sample-run-ok passes.
func TestShowRun(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		code exitcode.Code
	}{
		{sampleRun, exitcode.Checks},
		{sampleRunOK, exitcode.OK},
		{filepath.Join(t.TempDir(), "none"), exitcode.Invalid},
	} {
		var w bytes.Buffer
		err := noUserDirs().ShowRun(context.Background(), &w, tc.dir, "", nil, View{Format: "table"})
		if exitcode.Of(err) != int(tc.code) {
			t.Errorf("%s: %v (exit %d), want exit %d", tc.dir, err, exitcode.Of(err), tc.code)
		}
		if tc.code != exitcode.Invalid && !strings.Contains(w.String(), "formal_j_per_token") {
			t.Errorf("%s: results not shown:\n%s", tc.dir, w.String())
		}
	}
}

// Gate shows sample-run-ok beside sample-run: formal J/token 6170/1836
// against 6170/1786, a change of (1786/1836 - 1) × 100 = -2.7233 %.
func TestGate(t *testing.T) {
	ctx := context.Background()
	run, err := noUserDirs().Evaluate(ctx, sampleRunOK, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := noUserDirs().Evaluate(ctx, sampleRun, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	err = Gate(ctx, &w, run.Loaded, run.Run, report.Run{Meta: base.Run.Meta, Results: base.Results}, metricdefs.NewBaseline(base.Results), "json", false)
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	var doc struct {
		BaselineRun string `json:"baseline_run"`
		Results     map[string]struct {
			ChangePct *float64 `json:"change_pct"`
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	if doc.BaselineRun != base.Run.Meta.RunID {
		t.Errorf("baseline_run %q, want %q", doc.BaselineRun, base.Run.Meta.RunID)
	}
	if p := doc.Results["formal_j_per_token"].ChangePct; p == nil || math.Abs(*p-(1786.0/1836-1)*100) > 1e-9 {
		t.Errorf("formal_j_per_token change %v, want -2.7233 %%", p)
	}
	// The other way round, sample-run's own failed check fails the gate.
	err = Gate(ctx, &bytes.Buffer{}, base.Loaded, base.Run, report.Run{Meta: run.Run.Meta, Results: run.Results}, metricdefs.NewBaseline(run.Results), "table", false)
	if exitcode.Of(err) != int(exitcode.Checks) || !strings.Contains(err.Error(), "formal_requests_succeeded") {
		t.Errorf("gate of sample-run: %v, want its failed check", err)
	}
}

func TestNotEvaluated(t *testing.T) {
	cause := errors.New("x: division by zero")
	err := NotEvaluated("runs/a", cause)
	if got, want := err.Error(), "some formulas could not be evaluated on runs/a:\nx: division by zero"; got != want || !errors.Is(err, cause) {
		t.Errorf("%q, want %q wrapping the cause", got, want)
	}
}
