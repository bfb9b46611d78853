package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/plot"
)

// Plot draws a run into the file given, or <run directory name>.png in
// the current directory, and names it; a bad file or run is invalid input
// before anything is drawn.
func TestPlot(t *testing.T) {
	ctx := context.Background()
	run, err := filepath.Abs(sampleRunOK) // before t.Chdir
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name, dir, out string
		file, shown    string // the figure written, and the line naming it
		code           exitcode.Code
	}{
		{"svg", run, "a.svg", "a.svg", "figure: a.svg\n", exitcode.OK},
		{"default name", run, "", "sample-run-ok.png", "figure: sample-run-ok.png\n", exitcode.OK},
		{"bad extension", run, "a.gif", "", "", exitcode.Invalid},
		{"missing folder", run, filepath.Join("none", "a.svg"), "", "", exitcode.Invalid},
		{"no run", filepath.Join(dir, "none"), "b.svg", "", "", exitcode.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			err := noUserDirs().Plot(ctx, &w, tc.dir, "", nil, tc.out, plot.DefaultOptions, nil)
			if exitcode.Of(err) != int(tc.code) {
				t.Fatalf("err %v (exit %d), want exit %d", err, exitcode.Of(err), tc.code)
			}
			if w.String() != tc.shown {
				t.Errorf("shown %q, want %q", w.String(), tc.shown)
			}
			if tc.file == "" {
				return
			}
			if st, err := os.Stat(tc.file); err != nil || st.Size() == 0 {
				t.Errorf("figure %s: %v", tc.file, err)
			}
		})
	}
}

// FrontierPlot checks the file and the frontier's options first (invalid
// input); runs of one load each are drawn as the decision's points; a run
// out of the statistics alone leaves the decision no choice and no
// frontier to draw (a failure, after the comparison).
func TestFrontierPlot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
	runs := []string{sampleRun, sampleRunOK}
	for _, tc := range []struct {
		name string
		out  string
		fo   compare.FrontierOptions
		code exitcode.Code
		want string
	}{
		{"bad extension", filepath.Join(dir, "f.gif"), fo, exitcode.Invalid, "--out: "},
		{"bad latency", filepath.Join(dir, "f.svg"), compare.FrontierOptions{Latency: "bogus"}, exitcode.Invalid, "--latency: "},
		{"no frontier", filepath.Join(dir, "f.svg"), fo, exitcode.Failure, "no frontier"},
		{"decision's points", filepath.Join(dir, "d.svg"), fo, exitcode.OK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			dirs := runs
			if tc.name == "no frontier" {
				dirs = []string{sampleRun} // out of the statistics: no choice
			}
			err := noUserDirs().FrontierPlot(ctx, &w, dirs, "", tc.out, plot.Options{}, tc.fo, nil)
			if tc.code == exitcode.OK {
				if err != nil || w.String() != "frontier figure: "+tc.out+"\n" {
					t.Errorf("err %v, shown %q; want the figure written", err, w.String())
				}
				return
			}
			if exitcode.Of(err) != int(tc.code) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v (exit %d), want exit %d with %q", err, exitcode.Of(err), tc.code, tc.want)
			}
			if w.Len() != 0 {
				t.Errorf("shown %q, want nothing", w.String())
			}
		})
	}
}

// loadPoint copies sample-run-ok into a new run directory that ran at
// concurrency c: a load point of its configuration.
func loadPoint(t *testing.T, c int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("c%d", c))
	if err := os.CopyFS(dir, os.DirFS(sampleRunOK)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	params := doc["parameters"].(map[string]any)
	params["mode"], params["concurrency"] = "concurrency", c
	doc["run_id"] = fmt.Sprintf("%s-c%d", doc["run_id"], c)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Two load points of one configuration are a frontier: the figure is
// written (1000×700 when no size is given) and named.
func TestFrontierPlotDrawn(t *testing.T) {
	runs := []string{loadPoint(t, 1), loadPoint(t, 4)}
	out := filepath.Join(t.TempDir(), "f.svg")
	var w bytes.Buffer
	fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
	if err := noUserDirs().FrontierPlot(context.Background(), &w, runs, "", out, plot.Options{}, fo, nil); err != nil {
		t.Fatal(err)
	}
	if w.String() != "frontier figure: "+out+"\n" {
		t.Errorf("shown %q", w.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// 1000×700 px at 96 dpi: 1000 × 72/96 = 750 pt by 700 × 72/96 = 525 pt.
	if !bytes.Contains(b, []byte(`<svg width="750pt" height="525pt"`)) {
		t.Errorf("figure is not 1000×700 px:\n%.200s", b)
	}
}
