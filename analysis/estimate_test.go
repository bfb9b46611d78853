package analysis

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/report"
)

// Estimate refuses bad input before evaluating, names the run it cannot
// read, and cannot estimate sample-run-ok (7 requests never reach steady
// state, so steady_window_energy_j is not applicable: exit Eval).
func TestEstimateErrors(t *testing.T) {
	ok := EstimateInput{Dir: sampleRunOK, Requests: "100,1000", Rules: compare.BuiltinName, Format: "table"}
	with := func(f func(*EstimateInput)) EstimateInput { in := ok; f(&in); return in }
	for _, tc := range []struct {
		name string
		in   EstimateInput
		code exitcode.Code
		want string
	}{
		{"bad format", with(func(in *EstimateInput) { in.Format = "pdf" }), exitcode.Invalid, "pdf"},
		{"bad counts", with(func(in *EstimateInput) { in.Requests = "10,x" }), exitcode.Invalid, "--requests: "},
		{"bad rules", with(func(in *EstimateInput) { in.Rules = "no-such-rules.yaml" }), exitcode.Invalid, "invalid comparison profile:\n"},
		{"no run", with(func(in *EstimateInput) { in.Dir = filepath.Join(t.TempDir(), "none") }), exitcode.Invalid, "run "},
		{"no steady state", ok, exitcode.Eval, "steady_window_energy_j: not applicable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			warned := 0
			err := noUserDirs().Estimate(context.Background(), &w, tc.in, func(string, error) { warned++ })
			if exitcode.Of(err) != int(tc.code) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v (exit %d), want exit %d with %q", err, exitcode.Of(err), tc.code, tc.want)
			}
			if w.Len() != 0 || warned != 0 {
				t.Errorf("shown %q, warned %d times; want nothing", w.String(), warned)
			}
		})
	}
}

// Render writes html as one page and the text formats as compare and
// report render them.
func TestRender(t *testing.T) {
	ctx := context.Background()
	fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
	c, err := noUserDirs().Compare(ctx, []string{sampleRunOK}, "", compare.BuiltinName, nil, fo, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := noUserDirs().Report(ctx, []string{sampleRunOK}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	var direct bytes.Buffer
	if err := compare.Render(&direct, c.Report, "csv"); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := c.Render(&got, "csv", "v0"); err != nil || got.String() != direct.String() {
		t.Errorf("comparison csv differs from compare.Render (%v):\n%s", err, got.String())
	}
	direct.Reset()
	if err := report.RunsWithStages(&direct, r.Runs, r.Stages, "markdown"); err != nil {
		t.Fatal(err)
	}
	got.Reset()
	if err := r.Render(&got, "markdown", "v0"); err != nil || got.String() != direct.String() {
		t.Errorf("report markdown differs from report.RunsWithStages (%v):\n%s", err, got.String())
	}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"compare": func(b *bytes.Buffer) error { return c.Render(b, "html", "v0.1-test") },
		"report":  func(b *bytes.Buffer) error { return r.Render(b, "html", "v0.1-test") },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil || !strings.HasPrefix(strings.ToLower(b.String()), "<!doctype html>") || !strings.Contains(b.String(), "v0.1-test") {
			t.Errorf("%s html: %v, starts %q", name, err, b.String()[:min(b.Len(), 60)])
		}
	}
}
