package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/browsertest"
)

// xssScenario is a run label that would run a script if written as markup.
const xssScenario = `<script>window.xssFired=1</script>chat`

// quickRun runs benchmark-1.5 on the simulator with short stages and 250
// formal requests (about 25 s on 2 cores).
func quickRun(t *testing.T, dir string, extra ...string) {
	t.Helper()
	args := append([]string{"run", "benchmark-1.5", "--out", dir, "--no-progress",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "sample_interval=100ms",
		"--set", "request_count=250", "--set", "warmup_requests=2", "--label", "scenario=" + xssScenario}, extra...)
	if out, errOut, code := runCLI(t, args...); code != exitOK && code != exitChecks {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
}

// `report --format html --out` and `compare --format html --out` on
// simulated runs and on an asiai run of two engines: each file opens in
// Chromium with no console error and no request leaving it, shows what
// the command's tables show, and draws its charts.
func TestHTMLReportsInBrowser(t *testing.T) {
	browsertest.Find(t)
	if testing.Short() {
		t.Skip("runs the simulator three times")
	}
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "runs", "a"), filepath.Join(tmp, "runs", "b")
	quickRun(t, a, "--model", "sim-llm-8b", "--model-params", "8e9")
	quickRun(t, b, "--model", "sim-llm-70b", "--model-params", "70e9", "--seed", "2")
	asiai := filepath.Join(tmp, "asiai")
	if out, errOut, code := runCLI(t, "run", "asiai", "--out", asiai, "--no-progress", "--engine", "sim", "--engine", "sim",
		"--set", "request_count=2", "--set", "runs=2", "--set", "max_tokens=64"); code != exitOK {
		t.Fatalf("asiai run: exit %d\n%s\n%s", code, out, errOut)
	}

	t.Run("report", func(t *testing.T) {
		path := filepath.Join(tmp, "r.html")
		if out, errOut, code := runCLI(t, "report", a, "--format", "html", "--out", path); code != exitOK || out != "" {
			t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2<<20 {
			t.Errorf("report is %d bytes, over 2 MiB", st.Size())
		}
		run, err := archive.Load(a)
		if err != nil {
			t.Fatal(err)
		}
		p := browsertest.Open(t, path)
		defer p.CheckClean(t)
		prefix := browsertest.Eval[string](t, p, `document.querySelector('section.run').id`)
		if id := browsertest.Eval[string](t, p, `document.querySelector('section.run').dataset.runId`); id != run.Meta.RunID {
			t.Errorf("section of run %q, want %q", id, run.Meta.RunID)
		}
		series := browsertest.Eval[int](t, p, fmt.Sprintf(`window.jbCharts[%q].series.length - 1`, prefix+"-power"))
		if want := len(run.Meta.Hardware.Devices) + 1; series != want {
			t.Errorf("power chart has %d series, want %d (each device and the sum)", series, want)
		}
		bands := browsertest.Eval[[]string](t, p, fmt.Sprintf(`Array.prototype.map.call(document.querySelectorAll('#%s-power .band'), function(e){return e.dataset.stage;})`, prefix))
		var stages []string
		for _, s := range run.Meta.Stages {
			stages = append(stages, s.Name)
		}
		slices.Sort(bands)
		slices.Sort(stages)
		if !slices.Equal(bands, stages) {
			t.Errorf("stage bands %v, archive stages %v", bands, stages)
		}
		for _, sel := range []string{"#" + prefix + "-power .steady", "#" + prefix + "-lat-ttft canvas", "#" + prefix + "-lat-e2e canvas",
			"[data-metric=full_lifecycle_j_per_token]", "[data-check=release_closed]", "#simulated-banner"} {
			if !browsertest.Eval[bool](t, p, fmt.Sprintf(`document.querySelector(%q) !== null`, sel)) {
				t.Errorf("no %s in the report", sel)
			}
		}
		checkInert(t, p)
	})

	t.Run("compare", func(t *testing.T) {
		path := filepath.Join(tmp, "c.html")
		if out, errOut, code := runCLI(t, "compare", a, b, "--format", "html", "--out", path); code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		p := browsertest.Open(t, path)
		defer p.CheckClean(t)
		if n := browsertest.Eval[int](t, p, `document.querySelectorAll('#runs-table tbody tr').length`); n != 2 {
			t.Errorf("%d rows in the runs table, want 2", n)
		}
		// Two models: two configurations, a series each.
		if n := browsertest.Eval[int](t, p, `window.jbCharts['frontier-chart'].series.length - 1`); n != 2 {
			t.Errorf("energy–latency chart has %d series, want 2", n)
		}
		checkInert(t, p)
	})

	t.Run("asiai", func(t *testing.T) {
		path := filepath.Join(tmp, "asiai.html")
		if out, errOut, code := runCLI(t, "compare", asiai, "--format", "html", "--out", path); code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		p := browsertest.Open(t, path)
		defer p.CheckClean(t)
		if n := browsertest.Eval[int](t, p, `document.querySelectorAll('#asiai-table tbody tr').length`); n < 1 {
			t.Error("no asiai row")
		}
		if n := browsertest.Eval[int](t, p, `document.querySelectorAll('section.brief').length`); n != 2 {
			t.Errorf("%d run sections, want the 2 engines' runs", n)
		}
		if n := browsertest.Eval[int](t, p, `window.jbCharts['asiai-chart'] ? window.jbCharts['asiai-chart'].series.length - 1 : 0`); n < 1 {
			t.Error("no asiai chart")
		}
	})
}

// checkInert fails when the hostile label ran or is not shown as text.
func checkInert(t *testing.T, p *browsertest.Page) {
	t.Helper()
	if browsertest.Eval[bool](t, p, `window.xssFired !== undefined`) {
		t.Error("the run label ran as script")
	}
	if !browsertest.Eval[bool](t, p, fmt.Sprintf(`document.body.textContent.indexOf(%q) >= 0`, xssScenario)) {
		t.Error("the run label is not shown as text")
	}
}

// --out writes the text formats too, and a failed write leaves no file;
// an unknown format names html among the valid ones. (report exits as
// analyze: 3, the sample run fails formal_requests_succeeded.)
func TestReportOutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	if out, errOut, code := runCLI(t, "report", "../../archive/testdata/sample-run", "--format", "markdown", "--out", path); code != exitChecks || out != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "20240603T090000Z-sample") {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	_, errOut, code := runCLI(t, "report", "../../archive/testdata/sample-run", "--format", "pdf")
	if code != exitInvalid || !strings.Contains(errOut, "html") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")
	if _, errOut, code := runCLI(t, "compare", "../../archive/testdata/sample-run", "--format", "html", "--out", missing); code == exitOK || !strings.Contains(errOut, missing) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// A cap sweep on the simulator (one load, power limits 250, 350 and 450
// W): `compare --format html` shows each run's power limit in its row of
// the runs table, each point of the chart labelled with its setting (one
// series per limit), and the decision's chosen point by its label, ringed
// on the chart: "… · 250 W" by hand: every request is sent at once, and a
// 250 W cap cuts the simulator's J/token to about 0.58 of the uncapped
// one, 350 W to about 0.79 (telemetry/sim/settings.go; runner's
// TestRunGPUPowerLimitSimulatorPrediction), so 250 W is the lowest.
func TestCapSweepPageInBrowser(t *testing.T) {
	browsertest.Find(t)
	if testing.Short() {
		t.Skip("runs the simulator three times")
	}
	tmp := t.TempDir()
	limits := []string{"250", "350", "450"}
	for _, w := range limits {
		quickRun(t, filepath.Join(tmp, "runs", "w"+w), "--gpu-power-limit", w, "--max-concurrency", "64")
	}
	path := filepath.Join(tmp, "caps.html")
	if out, errOut, code := runCLI(t, "compare", filepath.Join(tmp, "runs"), "--format", "html", "--out", path); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	p := browsertest.Open(t, path)
	defer p.CheckClean(t)
	for _, w := range limits {
		run, err := archive.Load(filepath.Join(tmp, "runs", "w"+w))
		if err != nil {
			t.Fatal(err)
		}
		if g := run.Meta.GPUSettings; g == nil || g.PowerLimitW != w {
			t.Fatalf("run %s recorded gpu_settings %+v, want power limit %s", run.Meta.RunID, g, w)
		}
		row := browsertest.Eval[string](t, p, fmt.Sprintf(`(function(){var r = document.querySelector('#runs-table tr[data-run-id=%q]'); return r ? r.textContent : '';})()`, run.Meta.RunID))
		if !strings.Contains(row, w+" W") {
			t.Errorf("run %s's row does not show its power limit %s W: %q", run.Meta.RunID, w, row)
		}
	}
	// Every chart point names its setting; a series per setting drawn.
	labels := browsertest.Eval[[]string](t, p, `JSON.parse(document.getElementById('frontier-chart').dataset.labelTexts || '[]')`)
	settings := map[string]bool{}
	for _, l := range labels {
		_, w, ok := strings.Cut(l, " · ")
		if !ok || !slices.Contains(limits, strings.TrimSuffix(w, " W")) {
			t.Errorf("chart label %q does not name a power limit", l)
		}
		settings[w] = true
	}
	if n := browsertest.Eval[int](t, p, `window.jbCharts['frontier-chart'].series.length - 1`); n != len(settings) || n == 0 {
		t.Errorf("the chart has %d series for the settings %v, want one per setting", n, settings)
	}
	chosen := browsertest.Eval[string](t, p, `document.querySelector('#decision-chosen .point-label').textContent`)
	best := browsertest.Eval[string](t, p, `document.getElementById('frontier-chart').dataset.bestLabel || ''`)
	if !strings.HasSuffix(chosen, " · 250 W") || best != chosen || !slices.Contains(labels, chosen) {
		t.Errorf("chosen %q, ringed %q, chart labels %q; want the 250 W point (by hand), ringed", chosen, best, labels)
	}
}
