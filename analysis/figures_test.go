package analysis

import (
	"bytes"
	"context"
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
// input); runs of one load each have no frontier to draw (a failure, after
// the comparison).
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			err := noUserDirs().FrontierPlot(ctx, &w, runs, "", tc.out, plot.Options{}, tc.fo, nil)
			if exitcode.Of(err) != int(tc.code) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v (exit %d), want exit %d with %q", err, exitcode.Of(err), tc.code, tc.want)
			}
			if w.Len() != 0 {
				t.Errorf("shown %q, want nothing", w.String())
			}
		})
	}
}
