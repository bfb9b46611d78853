package analysis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/compare"
)

// boundFirstTokens copies the archive from and marks the first n formal
// requests' first-token times as upper bounds (first_token_bounded, with
// a 10 ms bound), as the streaming client records a first chunk read
// together with later data.
func boundFirstTokens(t *testing.T, from string, n int) string {
	t.Helper()
	dir := copyArchive(t, from, "", "", "")
	path := filepath.Join(dir, archive.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if n > 0 && strings.Contains(l, `"phase":"formal"`) {
			lines[i] = strings.Replace(l, `"ok":true,`, `"ok":true,"first_token_bounded":true,"first_token_bound_s":0.01,`, 1)
			n--
		}
	}
	if n > 0 {
		t.Fatalf("%s: too few formal requests", from)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A run whose formal requests have bounded first-token times fails
// first_token_times_exact, which invalidates its latency figures only:
// compare keeps its steady-state and full-lifecycle J/token in the
// medians, flags it first_tokens_bounded, and its summary marks TTFT, not
// J/token. sample-run-ok has 7 formal requests, so steady state needs
// windows of 3 with a loose CV (window=3, cv_max=10); 4 of the 7 first
// tokens are bounded.
func TestBoundedFirstTokensKeepJPerToken(t *testing.T) {
	ctx := context.Background()
	dir := boundFirstTokens(t, sampleRunOK, 4)
	sets := []string{"window=3", "cv_max=10"}
	e, err := noUserDirs().Evaluate(ctx, dir, "benchmark-1.5", sets)
	if err != nil || e.EvalErr != nil {
		t.Fatalf("evaluate: %v %v", err, e.EvalErr)
	}
	c := e.Results.Values["first_token_times_exact"]
	if c.Passed == nil || *c.Passed || !c.InvalidatesMetric("ttft_p50_ms") || c.InvalidatesMetric("steady_state_j_per_token") {
		t.Fatalf("first_token_times_exact = %+v, want failed, invalidating TTFT and not J/token", c)
	}
	steady, ok := e.Results.Values["steady_state_j_per_token"].Value.(float64)
	if !ok {
		t.Fatalf("no steady-state J/token: %+v", e.Results.Values["steady_state_j_per_token"])
	}
	// The built-in profile declares what the check invalidates; the
	// archived profile.yaml of sample-run-ok predates the declaration, so
	// the comparison profile's rule for it (removes none) decides.
	for _, profile := range []string{"benchmark-1.5", ""} {
		fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
		cmp, err := noUserDirs().Compare(ctx, []string{dir}, profile, compare.BuiltinName, sets, fo, nil)
		if err != nil {
			t.Fatal(err)
		}
		row := cmp.Report.Runs[0]
		if !row.Included || len(row.Removed) != 0 || !slices.ContainsFunc(row.Flags, func(f compare.Flag) bool { return f.Name == "first_tokens_bounded" }) {
			t.Errorf("profile %q: included %v, removed %v, flags %+v; want included, nothing removed, flagged first_tokens_bounded", profile, row.Included, row.Removed, row.Flags)
		}
		if len(cmp.Report.Groups) != 1 || cmp.Report.Groups[0].MedianSteady == nil || *cmp.Report.Groups[0].MedianSteady != steady {
			t.Errorf("profile %q: groups %+v: want the median steady-state J/token %v", profile, cmp.Report.Groups, steady)
		}
	}
}

// A sweep's comparison (Fit) keeps its tables and lines within 120
// columns off a terminal; without Fit (compare, --wide) they keep their
// full width.
func TestComparisonFits(t *testing.T) {
	ctx := context.Background()
	fo := compare.FrontierOptions{Latency: compare.DefaultLatency, Attainment: 0.99}
	c, err := noUserDirs().Compare(ctx, []string{sampleRun, sampleRunOK}, "", compare.BuiltinName, nil, fo, nil)
	if err != nil {
		t.Fatal(err)
	}
	widest := func() int {
		var buf strings.Builder
		if err := c.Render(&buf, "table", "test"); err != nil {
			t.Fatal(err)
		}
		most := 0
		for _, l := range strings.Split(buf.String(), "\n") {
			most = max(most, len([]rune(l)))
		}
		return most
	}
	wide := widest()
	c.Fit = true
	if fitted := widest(); fitted > 120 || wide <= 120 {
		t.Errorf("widest line %d fitted, %d wide; want ≤ 120 fitted (and a wide table to fit)", fitted, wide)
	}
}
