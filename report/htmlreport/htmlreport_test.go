package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/plot"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// The committed uPlot files are the ones the package doc names (taken
// from the npm tarball uplot-1.6.32.tgz).
func TestAssetsPinned(t *testing.T) {
	for _, a := range []struct{ file, sha string }{
		{"assets/uPlot.iife.min.js", "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f"},
		{"assets/uPlot.min.css", "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04"},
		{"assets/uPlot.LICENSE", "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd"},
	} {
		b, err := os.ReadFile(a.file)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != a.sha {
			t.Errorf("%s: sha256 %s, the package doc says %s", a.file, got, a.sha)
		}
	}
	if !strings.Contains(uplotJS, "(v1.6.32)") {
		t.Error("the embedded uPlot is not v1.6.32")
	}
	// The scripts and styles go inline, unescaped: a closing tag in them
	// would end the element early.
	for name, text := range map[string]string{"uPlot.iife.min.js": uplotJS, "report.js": reportJS, "uPlot.min.css": uplotCSS, "report.css": reportCSS} {
		if l := strings.ToLower(text); strings.Contains(l, "</script") || strings.Contains(l, "</style") {
			t.Errorf("%s holds a closing script or style tag", name)
		}
	}
}

// The page holds everything it needs (no src=, href= or url() to
// anything outside it), and escapes the user's strings in the markup.
func TestRunPageSelfContainedAndEscaped(t *testing.T) {
	run := synthRun(t, filepath.Join(t.TempDir(), "run"), "xss-run", xssModel)
	var buf bytes.Buffer
	if err := WriteRun(&buf, []RunInput{evaluate(t, run)}, Options{Version: "test", Now: time.Unix(base, 0)}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script>window.xssFired", "<img src=x", `src="http`, `href="http`, "url(http", "<link "} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;window.xssFired=1&lt;/script&gt;", // the model name in a heading
		"&lt;img src=x onerror=&#34;window.xssFired=2&#34;&gt;chat",
		html.EscapeString(report.SimulatedNote),
		"steady_state_j_per_token", "Boundary: GPU: 2 device(s)", "CV of each window",
		// a headline card shows the metric's label and boundary, keyed by
		// its name
		`<div class="card" data-metric="steady_state_j_per_token" title="steady_state_j_per_token: GPU energy in the steady-state window / output tokens in the same window"><div class="k">Steady-state energy per token <span class="bd">(GPU)</span></div>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Nothing to render is an error, not an empty page or a panic.
func TestWriteRunErrors(t *testing.T) {
	if err := WriteRun(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("no run: no error")
	}
	if err := WriteRun(&bytes.Buffer{}, []RunInput{{}}, Options{}); err == nil {
		t.Error("nil run: no error")
	}
	if err := WriteCompare(&bytes.Buffer{}, nil, nil, Options{}); err == nil {
		t.Error("nil comparison: no error")
	}
}

// paramString writes a default and the archived value alike: durations
// in seconds as run.json holds them.
func TestChangedParams(t *testing.T) {
	rows, note := changedParams(map[string]any{"baseline": 20.0, "window": 50.0, "extra": "x"},
		[]workflow.ParamDecl{{Name: "baseline", Default: 20 * time.Second}, {Name: "window", Default: 100}})
	if len(rows) != 2 || rows[0].Name != "extra" || rows[0].Default != "(not declared)" || rows[1].Name != "window" || rows[1].Value != "50" || rows[1].Default != "100" {
		t.Errorf("rows %+v", rows)
	}
	if note != "2 of 3 parameters differ from the profile's defaults" {
		t.Errorf("note %q", note)
	}
}

// A latency CDF goes through the sorted values, ends at 1, and its
// percentiles are numpy's linear ones: for 1..101 ms, p50 = 51, p90 = 91,
// p99 = 100 (rank pct/100·100, integral here).
func TestCDF(t *testing.T) {
	var xs []float64
	for i := 101; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	l, err := cdf("TTFT", xs)
	if err != nil {
		t.Fatal(err)
	}
	if l.P50 != 51 || l.P90 != 91 || l.P99 != 100 || l.N != 101 {
		t.Errorf("p50 %g p90 %g p99 %g n %d", l.P50, l.P90, l.P99, l.N)
	}
	if len(l.X) != 101 || l.X[0] != 1 || l.X[100] != 101 || l.Y[100] != 1 || math.Abs(l.Y[0]-1.0/101) > 1e-12 {
		t.Errorf("cdf ends (%g, %g) (%g, %g), %d points", l.X[0], l.Y[0], l.X[len(l.X)-1], l.Y[len(l.Y)-1], len(l.X))
	}
}

// Engine state: sums over label sets per scrape, KV usage in %.
func TestEngineState(t *testing.T) {
	ms := []record.EngineMetric{
		{T: 10, Name: "vllm:num_requests_running", Labels: map[string]string{"model_name": "a"}, Value: 2},
		{T: 10, Name: "vllm:num_requests_running", Labels: map[string]string{"model_name": "b"}, Value: 3},
		{T: 11, Name: "sglang:num_queue_reqs", Value: 4},
		{T: 11, Name: "vllm:kv_cache_usage_perc", Value: 0.5},
		{T: 11, Name: "vllm:generation_tokens_total", Value: 99},
	}
	got := engineState(ms, 10)
	if len(got) != 3 {
		t.Fatalf("%d series, want running, waiting, kv", len(got))
	}
	if got[0].Name != "running requests" || got[0].X[0] != 0 || got[0].Y[0] != 5 {
		t.Errorf("running %+v", got[0])
	}
	if got[1].Y[0] != 4 || got[2].Y[0] != 50 || got[2].X[0] != 1 {
		t.Errorf("waiting %+v kv %+v", got[1], got[2])
	}
}

func TestAnchorUnique(t *testing.T) {
	runs := []*runView{{Anchor: anchor("a.b"), Meta: record.Meta{RunID: "a.b"}}, {Anchor: anchor("a_b"), Meta: record.Meta{RunID: "a_b"}}}
	links := uniqueAnchors(runs)
	if runs[0].Anchor != "run-a_b" || runs[1].Anchor != "run-a_b-2" || links["a_b"] != "run-a_b-2" {
		t.Errorf("anchors %q %q, links %v", runs[0].Anchor, runs[1].Anchor, links)
	}
}

// compareRuns builds two synthetic runs and compare's report of them.
func compareRuns(t *testing.T) (*compare.Report, []compare.Run) {
	t.Helper()
	dir := t.TempDir()
	var runs []compare.Run
	for _, id := range []string{"cmp-a", "cmp-b"} {
		run := synthRun(t, filepath.Join(dir, id), id, xssModel)
		in := evaluate(t, run)
		runs = append(runs, compare.Run{Dir: run.Dir, Meta: run.Meta, Results: in.Results})
	}
	prof, err := compare.ReadProfile(compare.BuiltinName)
	if err != nil {
		t.Fatal(err)
	}
	return prof.Compare(runs), runs
}

func TestComparePage(t *testing.T) {
	rep, runs := compareRuns(t)
	var buf bytes.Buffer
	if err := WriteCompare(&buf, rep, runs, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`href="#run-cmp-a"`, `id="run-cmp-a"`, `href="#run-cmp-b"`, "Engine pairs", "Flagged runs", "&lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>window.xssFired") {
		t.Error("the model name is markup")
	}
}

// Several runs: a section each, with its own charts, under distinct ids.
func TestWriteRunSeveral(t *testing.T) {
	dir := t.TempDir()
	var ins []RunInput
	for _, id := range []string{"a.1", "a_1"} {
		ins = append(ins, evaluate(t, synthRun(t, filepath.Join(dir, id), id, "m")))
	}
	var buf bytes.Buffer
	if err := WriteRun(&buf, ins, Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`id="run-a_1"`, `id="run-a_1-2"`, `id="run-a_1-power"`, `id="run-a_1-2-power"`, "joulebench report: 2 runs"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// thin keeps each bucket's extremes: of 0..9 with a spike of 100 at 5,
// 4 points (2 buckets of 5) are (0, 4) and (5, 9) by value: 0, 4 from
// the first and 100 (at 5), 6 from the second.
func TestThin(t *testing.T) {
	var pts []plot.XY
	for i := range 10 {
		y := float64(i)
		if i == 5 {
			y = 100
		}
		pts = append(pts, plot.XY{X: float64(i), Y: y})
	}
	got := thin(pts, 4)
	want := []plot.XY{{X: 0, Y: 0}, {X: 4, Y: 4}, {X: 5, Y: 100}, {X: 6, Y: 6}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("thin: %v, want %v", got, want)
	}
	if len(thin(pts, 20)) != 10 {
		t.Error("thin dropped points under the limit")
	}
}

// Runs of one configuration are points of one series, whatever their
// load; another dataset or max_tokens is another series.
func TestFrontierConfigs(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	rep := &compare.Report{Runs: []compare.RunRow{
		{RunID: "a", Scenario: "chat", Model: "m", Engine: "sim", SizeGroup: "<=50B", FullJPerToken: v(0.3), Included: true},
		{RunID: "b", Scenario: "chat", Model: "m", Engine: "sim", SizeGroup: "<=50B", FullJPerToken: v(0.2), Included: true},
		{RunID: "c", Scenario: "chat", Model: "m", Engine: "sim", SizeGroup: "<=50B", FullJPerToken: v(0.25), Included: true},
	}}
	run := func(id string, tpot float64, maxTokens float64) compare.Run {
		return compare.Run{Meta: record.Meta{RunID: id, Parameters: map[string]any{"max_tokens": maxTokens}, RequestSet: record.RequestSet{Source: "builtin:chat"}},
			Results: &record.Results{Values: map[string]record.Result{"tpot_p50_ms": {Value: tpot}}}}
	}
	fr, note := buildFrontier(rep, []compare.Run{run("a", 20, 256), run("b", 10, 256), run("c", 15, 512)})
	if fr == nil || len(fr.Series) != 2 || fr.XName != "tpot_p50_ms" {
		t.Fatalf("frontier %+v", fr)
	}
	// a and b, sorted by latency: b (10 ms) first.
	if s := fr.Series[0]; len(s.X) != 2 || s.X[0] != 10 || s.Y[0] != 0.2 || s.Runs[0] != "b" || !strings.HasSuffix(s.Name, "max_tokens 256") {
		t.Errorf("first series %+v", s)
	}
	if !strings.Contains(note, "frontier") {
		t.Errorf("note %q", note)
	}
}

// With compare's frontier (load points of one configuration), the chart
// draws it: one series per model · engine · scenario · configuration,
// points in order of latency, on compare's J/token basis.
func TestFrontierFromCompare(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	rep := &compare.Report{Frontier: []compare.FrontierPoint{
		{Model: "m", Engine: "sim", Scenario: "chat", RunID: "c4", Latency: v(9), JPerToken: v(0.5), Basis: "formal", LatencyMetric: "tpot_p50_ms"},
		{Model: "m", Engine: "sim", Scenario: "chat", RunID: "c1", Latency: v(7), JPerToken: v(1.2), Basis: "formal", LatencyMetric: "tpot_p50_ms"},
		{Model: "m", Engine: "sim", Scenario: "chat", RunID: "x1", Latency: v(8), JPerToken: v(0.9), Basis: "formal", LatencyMetric: "tpot_p50_ms",
			Configuration: []compare.FieldValue{{Field: "max_tokens", Value: "64"}}},
	}}
	fr, note := buildFrontier(rep, nil)
	if fr == nil || len(fr.Series) != 2 || fr.XName != "tpot_p50_ms" || fr.YName != "J/token (formal)" {
		t.Fatalf("frontier %+v", fr)
	}
	if s := fr.Series[0]; len(s.X) != 2 || s.X[0] != 7 || s.Y[0] != 1.2 || s.Runs[1] != "c4" {
		t.Errorf("first series %+v: want c1 (7 ms) then c4 (9 ms)", s)
	}
	if s := fr.Series[1]; s.Name != "m · sim · chat · max_tokens 64" {
		t.Errorf("second series %q", s.Name)
	}
	if !strings.Contains(note, "frontier compare computed") {
		t.Errorf("note %q", note)
	}
}
