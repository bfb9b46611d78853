package htmlreport

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/browsertest"
)

// chartInfo is what a uPlot chart reports in the page.
type chartInfo struct {
	Series  int     // series besides x
	Canvas  bool    // a canvas was drawn
	XMin    float64 // the x scale
	XMax    float64
	YMin    float64 // the default y scale (power)
	OverX   float64 // the plot area in the viewport
	OverW   float64
	Present bool
}

func chart(t *testing.T, p *browsertest.Page, id string) chartInfo {
	t.Helper()
	return browsertest.Eval[chartInfo](t, p, fmt.Sprintf(`(function(){
		var u = window.jbCharts[%q];
		if (!u) return {Present:false};
		var r = u.over.getBoundingClientRect();
		return {Present:true, Series:u.series.length-1, Canvas:!!u.root.querySelector('canvas'),
			XMin:u.scales.x.min, XMax:u.scales.x.max, YMin:u.scales.y ? u.scales.y.min : 0, OverX:r.left, OverW:r.width};
	})()`, id))
}

// bandBox is a band's place in the plot area, in px from its left edge.
type bandBox struct{ Left, Width float64 }

func bandAt(t *testing.T, p *browsertest.Page, chartID, sel string) bandBox {
	t.Helper()
	return browsertest.Eval[bandBox](t, p, fmt.Sprintf(`(function(){
		var u = window.jbCharts[%q], e = u.over.querySelector(%q);
		if (!e) return {Left:-1, Width:-1};
		var o = u.over.getBoundingClientRect(), b = e.getBoundingClientRect();
		return {Left:b.left-o.left, Width:b.width};
	})()`, chartID, sel))
}

// The run report in Chromium: no console errors and no request leaving
// the file; the charts drawn with their series; the stage bands and the
// steady-state span where the archive and the results put them; a hover
// shows the value under the cursor; the hostile model name, label and
// device name are text.
func TestRunReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	run := synthRun(t, filepath.Join(dir, "run"), "xss-run", xssModel)
	in := evaluate(t, run)
	path := writeFile(t, dir, "report.html", func(f *os.File) error { return WriteRun(f, []RunInput{in}, Options{Version: "test"}) })
	p := browsertest.Open(t, path)
	defer p.CheckClean(t)

	prefix := "run-xss-run"
	// Two devices and their sum; running, waiting, KV usage; J/token, CV
	// and its threshold; one line per latency.
	for _, c := range []struct {
		id     string
		series int
	}{{prefix + "-power", 3}, {prefix + "-engine", 3}, {prefix + "-jpt", 3},
		{prefix + "-lat-ttft", 1}, {prefix + "-lat-tpot", 1}, {prefix + "-lat-itl", 1}, {prefix + "-lat-e2e", 1}} {
		got := chart(t, p, c.id)
		if !got.Present || !got.Canvas || got.Series != c.series {
			t.Errorf("chart %s: %+v, want drawn with %d series", c.id, got, c.series)
		}
	}

	// The timeline shows the whole run, [0, 60] s after its start.
	pw := chart(t, p, prefix+"-power")
	if math.Abs(pw.XMin) > 1e-9 || math.Abs(pw.XMax-60) > 1e-9 {
		t.Fatalf("power chart x range [%g, %g], want [0, 60]", pw.XMin, pw.XMax)
	}
	// Power is drawn from zero, not from the lowest sample.
	if pw.YMin != 0 {
		t.Errorf("power chart y starts at %g W, want 0", pw.YMin)
	}
	px := func(s float64) float64 { return (s - pw.XMin) / (pw.XMax - pw.XMin) * pw.OverW }
	for _, st := range run.Meta.Stages {
		got := bandAt(t, p, prefix+"-power", fmt.Sprintf(`.band[data-stage=%q]`, st.Name))
		a, b := px(st.Start-base), px(st.End-base)
		if math.Abs(got.Left-a) > 1.5 || math.Abs(got.Width-(b-a)) > 1.5 {
			t.Errorf("stage %s at [%.1f, +%.1f] px, want [%.1f, +%.1f] (from %g–%g s)", st.Name, got.Left, got.Width, a, b-a, st.Start-base, st.End-base)
		}
	}
	start, ok1 := number(in.Results, "steady_window_start")
	end, ok2 := number(in.Results, "steady_window_end")
	if !ok1 || !ok2 {
		t.Fatalf("the synthetic run reached no steady state: %+v", in.Results.Values["steady_window_start"])
	}
	got := bandAt(t, p, prefix+"-power", ".steady")
	if a, b := px(start-base), px(end-base); math.Abs(got.Left-a) > 1.5 || math.Abs(got.Width-(b-a)) > 1.5 {
		t.Errorf("steady span at [%.1f, +%.1f] px, want [%.1f, +%.1f] (results: %g–%g s)", got.Left, got.Width, a, b-a, start-base, end-base)
	}

	// Hover over the formal stage (300 W a device, 600 W summed): the
	// legend shows the values at the cursor.
	p.ScrollTo(t, "#"+prefix+"-power")
	pw = chart(t, p, prefix+"-power")
	over := p.Rect(t, "#"+prefix+"-power .u-over")
	p.Hover(t, over.X+px(30), over.Y+over.Height/2)
	vals := browsertest.Eval[[]string](t, p, fmt.Sprintf(`Array.prototype.map.call(document.querySelectorAll('#%s-power .u-legend .u-series .u-value'), function(e){return e.textContent;})`, prefix))
	if want := []string{"300.0 W", "300.0 W", "600.0 W"}; len(vals) != 4 || !strings.HasSuffix(vals[0], " s") || strings.Join(vals[1:], ",") != strings.Join(want, ",") {
		t.Errorf("legend after hover %q, want a time and %q", vals, want)
	}

	// The hostile strings are shown as text, and ran nothing.
	if fired := browsertest.Eval[bool](t, p, `window.xssFired !== undefined`); fired {
		t.Error("a user-supplied string ran as script")
	}
	if txt := browsertest.Eval[string](t, p, `document.querySelector('h1').textContent`); !strings.Contains(txt, xssModel) {
		t.Errorf("title %q does not show the model name as text", txt)
	}
	if n := browsertest.Eval[int](t, p, `document.querySelectorAll('main script, main img').length`); n != 0 {
		t.Errorf("%d script or img elements inside the report body", n)
	}
	if txt := browsertest.Eval[string](t, p, `document.body.textContent`); !strings.Contains(txt, xssLabel) || !strings.Contains(txt, xssDevice) {
		t.Error("the label or device name is not shown as text")
	}

	// The request table: 301 rows (the last answered as the formal stage
	// ends), 50 a page.
	info := browsertest.Eval[string](t, p, fmt.Sprintf(`document.querySelector('#%s-reqs .pager .note').textContent`, prefix))
	if !strings.HasPrefix(info, "301 formal requests; page 1 of 7") {
		t.Errorf("pager says %q", info)
	}
}

// The comparison in Chromium: the tables, the links from a row to its
// run's section, the energy–latency chart with a series per configuration.
func TestCompareReportInBrowser(t *testing.T) {
	rep, runs := compareRuns(t)
	path := writeFile(t, t.TempDir(), "compare.html", func(f *os.File) error { return WriteCompare(f, rep, runs, Options{Version: "test"}) })
	p := browsertest.Open(t, path)
	defer p.CheckClean(t)
	rows := browsertest.Eval[int](t, p, `document.querySelectorAll('#runs-table tbody tr').length`)
	if rows != 2 {
		t.Errorf("%d rows in the runs table, want 2", rows)
	}
	// Every link to a run lands on a section of that run.
	bad := browsertest.Eval[[]string](t, p, `Array.prototype.filter.call(document.querySelectorAll('a[href^="#run-"]'), function(a){
		var s = document.getElementById(a.getAttribute('href').slice(1));
		return !s || s.dataset.runId !== a.textContent;
	}).map(function(a){return a.getAttribute('href');})`)
	if len(bad) > 0 {
		t.Errorf("links to no section of their run: %v", bad)
	}
	// Both runs are one configuration (same scenario, model, engine, size
	// group): one series, two load points.
	fr := chart(t, p, "frontier-chart")
	if !fr.Present || !fr.Canvas || fr.Series != 1 {
		t.Errorf("frontier chart %+v, want one series", fr)
	}
	if fired := browsertest.Eval[bool](t, p, `window.xssFired !== undefined`); fired {
		t.Error("a user-supplied string ran as script")
	}
}

// Runs with little or no data still give a page without a console error:
// the 7-request sample archive, a run not evaluated, a run without power
// samples or /metrics scrapes (told in words where a chart would be), and
// a replayed one (labelled).
func TestEdgeRunsInBrowser(t *testing.T) {
	dir := t.TempDir()
	sample, err := archive.Load("../../archive/testdata/sample-run")
	if err != nil {
		t.Fatal(err)
	}
	bare := synthRun(t, filepath.Join(dir, "bare"), "bare", "m")
	bare.Power, bare.EngineMetrics = nil, nil
	replayed := synthRun(t, filepath.Join(dir, "replayed"), "replayed", "m")
	replayed.Meta.Telemetry.Source = "replay"
	ins := []RunInput{evaluate(t, sample), {Run: synthRun(t, filepath.Join(dir, "raw"), "raw", "m")}, evaluate(t, bare), evaluate(t, replayed)}
	path := writeFile(t, dir, "edge.html", func(f *os.File) error { return WriteRun(f, ins, Options{}) })
	p := browsertest.Open(t, path)
	defer p.CheckClean(t)
	text := browsertest.Eval[string](t, p, `document.body.innerText`)
	for _, want := range []string{"run not evaluated", "No power samples in this run.", "No engine state", "REPLAYED"} {
		if !strings.Contains(text, want) {
			t.Errorf("page does not say %q", want)
		}
	}
	if n := browsertest.Eval[int](t, p, `document.querySelectorAll('section.run').length`); n != 4 {
		t.Errorf("%d run sections, want 4", n)
	}
}
