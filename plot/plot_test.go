package plot

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// t0 of the sample archive.
const base = 1.7e9

// sampleRun writes a small archive: two devices sampled every 0.5 s over
// 60 s (gpu0 at 100 W and gpu1 at 50 W when idle; 400 W and 300 W during the
// formal stage), stages baseline [0,10], startup [10,20] with warm-up
// [15,20] inside it, formal [20,40], release [40,60], and 300 formal
// requests generating 0.5 s each.
func sampleRun(t *testing.T) *record.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	stage := func(name string, a, b float64) record.Stage {
		return record.Stage{Name: name, Start: base + a, End: base + b}
	}
	meta := record.Meta{
		RunID: "sample", Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"},
		Parameters: map[string]any{"window": 100.0, "cv_max": 0.03, "release_tolerance": 0.05, "formal_energy_method": "trapz"},
		Engine:     record.EngineInfo{Kind: "sim", Model: "sim-llm-8b"},
		Hardware:   record.Hardware{Devices: []record.Device{{ID: "gpu0", Method: "power"}, {ID: "gpu1", Method: "power"}}},
		Status:     record.StatusComplete, StartedAt: base, EndedAt: base + 60,
		Stages: []record.Stage{stage("baseline", 0, 10), stage("startup", 10, 20), stage("warmup", 15, 20),
			stage("formal", 20, 40), stage("release", 40, 60)},
	}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= 120; k++ {
		x := float64(k) * 0.5
		p0, p1 := 100.0, 50.0
		switch {
		case x >= 20 && x <= 40:
			p0, p1 = 400, 300
		case x > 10 && x < 20:
			p0, p1 = 200, 150
		}
		if err := w.AppendPower(
			record.PowerSample{T: base + x, Device: "gpu0", PowerW: p0, MemUsedBytes: -1},
			record.PowerSample{T: base + x, Device: "gpu1", PowerW: p1, MemUsedBytes: -1},
		); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		// Sent 0.1 s before the first token: the first is sent at 20.0, as
		// the stage starts (the reader holds requests inside their stage).
		first := base + 20.1 + float64(i)*0.06
		if err := w.AppendRequest(record.Request{ID: fmt.Sprintf("f%03d", i), Phase: "formal",
			SentAt: first - 0.1, FirstTokenAt: first, DoneAt: first + 0.5, OutputTokens: 50 + i%3, TokensSource: "usage", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	// a failed request and a warm-up request are not plotted; the failed
	// one's error came at 40, where the formal stage ends (at its last
	// response: the reader holds the stage to its requests)
	_ = w.AppendRequest(record.Request{ID: "bad", Phase: "formal", SentAt: base + 21, DoneAt: base + 40, Error: "HTTP 500"})
	_ = w.AppendRequest(record.Request{ID: "w0", Phase: "warmup", SentAt: base + 15, FirstTokenAt: base + 15.5, DoneAt: base + 16, OutputTokens: 10, OK: true})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// sampleResults are benchmark-1.5's results on sampleRun: the
// steady_window_* metrics, and the steady_state() result with the window
// and cv_max it searched with.
func sampleResults() *record.Results {
	return steadyResults(100, 0.03)
}

// steadyResults are sampleResults with the search's window and cv_max.
func steadyResults(window int64, cvMax float64) *record.Results {
	num := func(v any) record.Result { return record.Result{Kind: "metric", Value: v} }
	return &record.Results{Order: []string{"steady"}, Values: map[string]record.Result{
		"steady": {Kind: "derived", Value: map[string]any{"reached": true, "start": base + 25.0, "end": base + 40.0,
			"start_index": int64(50), "end_index": int64(300), "window": window, "cv_max": cvMax}},
		"steady_window_start":         num(base + 25.0),
		"steady_window_end":           num(base + 40.0),
		"steady_window_first_request": num(int64(50)),
		"steady_window_last_request":  num(int64(300)),
	}}
}

func TestPrepare(t *testing.T) {
	d, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	if d.T0 != base || !strings.HasPrefix(d.Title, "SIMULATED") {
		t.Errorf("t0 %v, title %q", d.T0, d.Title)
	}
	if len(d.Devices) != 2 || len(d.Devices[0].Points) != 121 || len(d.Total.Points) != 121 {
		t.Fatalf("devices %d, points %d, total %d; want 2, 121, 121", len(d.Devices), len(d.Devices[0].Points), len(d.Total.Points))
	}
	// at x = 30 s: 400 + 300 = 700 W in total
	if p := d.Total.Points[60]; p.X != 30 || p.Y != 700 {
		t.Errorf("total at 30 s = %+v, want {30 700}", p)
	}
	// warm-up lies inside startup: its label goes one row lower
	levels := map[string]int{}
	for _, s := range d.Stages {
		levels[s.Name] = s.Level
	}
	if levels["warmup"] != 1 || levels["startup"] != 0 || levels["formal"] != 0 {
		t.Errorf("stage levels = %v", levels)
	}
	// baselines: constant 100 W and 50 W over [0, 10] → bands 95…105 and
	// 47.5…52.5 W over the release stage [40, 60]; summed 150 ± 7.5 W.
	if len(d.Baselines) != 2 || d.Baselines[0].Baseline != 100 || d.Baselines[0].Lo != 95 || d.Baselines[0].Hi != 105 ||
		d.Baselines[1].Lo != 47.5 || d.Baselines[1].Hi != 52.5 || d.Baselines[0].Start != 40 || d.Baselines[0].End != 60 {
		t.Errorf("baselines = %+v", d.Baselines)
	}
	if tb := d.TotalBaseline; tb == nil || tb.Baseline != 150 || tb.Lo != 142.5 || tb.Hi != 157.5 {
		t.Errorf("total baseline = %+v", d.TotalBaseline)
	}
	if d.Steady == nil || d.Steady.Start != 25 || d.Steady.End != 40 || d.SteadyFirst != 50 || d.SteadyLast != 300 {
		t.Errorf("steady = %+v, requests %d…%d", d.Steady, d.SteadyFirst, d.SteadyLast)
	}
	// 300 successful formal requests; 300 - 100 + 1 = 201 rolling windows
	if len(d.JPerToken) != 300 || d.Window != 100 || len(d.CV) != 201 || d.CV[0].X != 100 || d.CVMax != 0.03 {
		t.Errorf("J/token %d, window %d, CV %d (first at %v), cv_max %v", len(d.JPerToken), d.Window, len(d.CV), d.CV[0].X, d.CVMax)
	}
	for _, p := range d.JPerToken {
		if !(p.Y > 0) || math.IsInf(p.Y, 0) {
			t.Fatalf("J/token %v at request %v", p.Y, p.X)
		}
	}

	// A window larger than the run: as many requests as there are.
	d, _ = Prepare(sampleRun(t), steadyResults(500, 0.03))
	if d.Window != 300 || len(d.CV) != 1 {
		t.Errorf("window %d, CV %d", d.Window, len(d.CV))
	}
}

// The rolling CV's window and threshold are those the steady-state search
// used (its result's window and cv_max), whatever run.json's parameters
// named window and cv_max say; without a search in the results there is
// no rolling CV and no threshold, and a note says why (no default
// window of 100 or threshold of 0.03 stands in).
func TestRollingCVFromSteadySearch(t *testing.T) {
	run := sampleRun(t) // parameters window 100, cv_max 0.03
	d, err := Prepare(run, steadyResults(20, 0.05))
	if err != nil {
		t.Fatal(err)
	}
	// 300 J/token values, windows of 20: 300 − 20 + 1 = 281 CVs, the first
	// at request 20.
	if d.Window != 20 || d.CVMax != 0.05 || len(d.CV) != 281 || d.CV[0].X != 20 {
		t.Errorf("window %d, cv_max %v, %d CVs; want 20, 0.05, 281", d.Window, d.CVMax, len(d.CV))
	}
	delete(run.Meta.Parameters, "window")
	delete(run.Meta.Parameters, "cv_max")
	if d, _ = Prepare(run, steadyResults(20, 0.05)); d.Window != 20 || d.CVMax != 0.05 {
		t.Errorf("without the parameters: window %d, cv_max %v; want 20, 0.05", d.Window, d.CVMax)
	}
	for name, res := range map[string]*record.Results{"not evaluated": nil, "no search": {Values: map[string]record.Result{}}} {
		run.Meta.Parameters["window"], run.Meta.Parameters["cv_max"] = 100.0, 0.03
		d, err := Prepare(run, res)
		if err != nil {
			t.Fatal(err)
		}
		if d.Window != 0 || d.CVMax != 0 || len(d.CV) != 0 || len(d.JPerToken) != 300 ||
			!slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "no rolling CV") }) {
			t.Errorf("%s: window %d, cv_max %v, %d CVs, %d J/token, notes %q; want no CV, 300 J/token and a note",
				name, d.Window, d.CVMax, len(d.CV), len(d.JPerToken), d.Notes)
		}
		var buf bytes.Buffer
		if err := Render(&buf, d, "svg", DefaultOptions); err != nil || !strings.Contains(buf.String(), "no rolling CV") {
			t.Errorf("%s: render %v; the CV panel does not say why it is empty", name, err)
		}
	}
}

func TestRenderPNGAndSVG(t *testing.T) {
	samples := map[string]*Data{}
	d, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	samples["built"] = d
	// The sample archive shipped with the project, as it is (read only).
	shipped, err := archive.Load(filepath.Join("..", "archive", "testdata", "sample-run"))
	if err != nil {
		t.Fatal(err)
	}
	if samples["shipped"], err = Prepare(shipped, shipped.Results); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, d := range samples {
		for _, opt := range []Options{DefaultOptions, {Width: 800, Height: 600}} {
			png1 := filepath.Join(dir, name+".png")
			if err := Save(png1, d, opt); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(png1)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: not a PNG: %v", png1, err)
			}
			if b := img.Bounds(); b.Dx() != opt.Width || b.Dy() != opt.Height {
				t.Errorf("%s: %d × %d px, want %d × %d", name, b.Dx(), b.Dy(), opt.Width, opt.Height)
			}
			svg := filepath.Join(dir, name+".svg")
			if err := Save(svg, d, opt); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			s := strings.TrimSpace(string(b))
			if !strings.HasPrefix(s, "<?xml") && !strings.HasPrefix(s, "<svg") {
				t.Errorf("%s does not start like SVG: %.40q", svg, s)
			}
			// 96 px = 72 pt
			want := fmt.Sprintf(`width="%gpt"`, float64(opt.Width)*0.75)
			if !strings.Contains(s, "<svg") || !strings.Contains(s, want) || !strings.HasSuffix(s, "</svg>") {
				t.Errorf("%s: want an <svg> element with %s, complete", svg, want)
			}
			if !strings.Contains(s, "SIMULATED") || (name == "built" && !strings.Contains(s, "steady-state window")) {
				t.Errorf("%s: the figure must say SIMULATED and mark the steady-state window", svg)
			}
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, d, "pdf", DefaultOptions); err != nil || !bytes.HasPrefix(buf.Bytes(), []byte("%PDF")) {
		t.Errorf("pdf: %v, starts %.8q", err, buf.Bytes())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Prepare(nil, nil); err == nil {
		t.Error("Prepare(nil): no error")
	}
	if err := Render(&bytes.Buffer{}, nil, "png", DefaultOptions); err == nil {
		t.Error("Render(nil): no error")
	}
	for _, o := range []Options{{Width: 0, Height: 900}, {Width: 1200, Height: 200000}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := FormatOf("x.jpg"); err == nil || !strings.Contains(err.Error(), "x.jpg") {
		t.Errorf("FormatOf(x.jpg) = %v", err)
	}
	if err := Render(&bytes.Buffer{}, &Data{}, "gif", DefaultOptions); err == nil {
		t.Error("gif: no error")
	}
	// A run without power or requests still draws, and says why it is empty.
	run := sampleRun(t)
	run.Power, run.Requests = nil, nil
	d, err := Prepare(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(d.Notes, ";"), "no power samples") {
		t.Errorf("notes = %v", d.Notes)
	}
	if err := Render(&bytes.Buffer{}, d, "png", Options{Width: 600, Height: 400}); err != nil {
		t.Errorf("render empty: %v", err)
	}
	// Bad power data is an error naming the run.
	run = sampleRun(t)
	run.Power = append(run.Power, run.Power[0]) // duplicate sample time
	if _, err := Prepare(run, nil); err == nil || !strings.Contains(err.Error(), run.Dir) {
		t.Errorf("duplicate sample: %v", err)
	}
	// Saving into a missing directory fails cleanly.
	if err := Save(filepath.Join(t.TempDir(), "no", "such", "x.png"), d, DefaultOptions); err == nil {
		t.Error("save into a missing directory: no error")
	}
}

func TestDecimate(t *testing.T) {
	pts := make([]XY, 10001)
	for i := range pts {
		pts[i] = XY{float64(i), float64(i % 7)}
	}
	pts[5000].Y = 1000 // a spike survives
	out := decimate(pts, 1000)
	if len(out) > 1002 || out[0] != pts[0] || out[len(out)-1] != pts[len(pts)-1] {
		t.Errorf("decimate: %d points, ends %v %v", len(out), out[0], out[len(out)-1])
	}
	spike := false
	for i, p := range out {
		spike = spike || p.Y == 1000
		if i > 0 && p.X <= out[i-1].X {
			t.Fatalf("not in time order at %d", i)
		}
	}
	if !spike {
		t.Error("the spike was lost")
	}
	if got := decimate(pts[:10], 1000); len(got) != 10 {
		t.Errorf("short series changed: %d", len(got))
	}
}

// benchmark-1.0 defines no steady_window_* metrics: the window comes from
// the derived value steady (the steady_state() result, an object in
// results.json), whether evaluated in-process (int64 indexes) or read back
// from JSON (float64). Without the fix the figure said "no steady-state
// window in the results" for a run whose steady state was reached.
func TestSteadyWindowFromAnyProfile(t *testing.T) {
	run := sampleRun(t)
	derived := func(v map[string]any) *record.Results {
		return &record.Results{Order: []string{"formal", "steady"},
			Values: map[string]record.Result{"steady": {Kind: "derived", Value: v}, "formal": {Kind: "derived", Value: "list"}}}
	}
	for _, c := range []struct {
		name string
		v    map[string]any
	}{
		{"in-process", map[string]any{"reached": true, "start": base + 25.0, "end": base + 40.0, "start_index": int64(50), "end_index": int64(300)}},
		{"from JSON", map[string]any{"reached": true, "start": base + 25.0, "end": base + 40.0, "start_index": 50.0, "end_index": 300.0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Prepare(run, derived(c.v))
			if err != nil {
				t.Fatal(err)
			}
			if d.Steady == nil || d.Steady.Start != 25 || d.Steady.End != 40 || d.SteadyFirst != 50 || d.SteadyLast != 300 {
				t.Errorf("steady %+v, requests %d…%d; want [25, 40], 50…300 (notes %q)", d.Steady, d.SteadyFirst, d.SteadyLast, d.Notes)
			}
		})
	}
	d, err := Prepare(run, derived(map[string]any{"reached": false, "reason": "only 3 windows", "start": 0.0, "end": 0.0}))
	if err != nil {
		t.Fatal(err)
	}
	if d.Steady != nil || !slices.Contains(d.Notes, "no steady-state window: only 3 windows") {
		t.Errorf("not reached: steady %+v, notes %q", d.Steady, d.Notes)
	}
}

// A CV far above the threshold is cut: the caption names the cut and the
// axis drawn ends there (cv_max 0.03: cut at 6 × 0.03 = 0.18, axis to
// 0.18 × 1.05 = 0.189), not at the data's maximum (0.5), which Add used to
// widen it to after the maximum was set.
func TestCVAxisCutAsCaptioned(t *testing.T) {
	d := &Data{CVMax: 0.03, Window: 10}
	for i := range 40 {
		d.JPerToken = append(d.JPerToken, XY{float64(i + 1), 1})
		d.CV = append(d.CV, XY{float64(i + 1), 0.01 + 0.49*float64(i%2)})
	}
	p := d.cvPlot(nil)
	if !strings.Contains(p.Title.Text, "(axis cut at 0.18)") {
		t.Errorf("title %q does not name the cut", p.Title.Text)
	}
	if math.Abs(p.Y.Max-0.189) > 1e-12 || p.Y.Min != 0 {
		t.Errorf("axis [%v, %v], want [0, 0.189]", p.Y.Min, p.Y.Max)
	}
}

// --out in a folder that does not exist: the error names the folder, not
// the temporary file the figure is first written to.
func TestSaveMissingFolder(t *testing.T) {
	d, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing-dir")
	err = Save(filepath.Join(missing, "x.png"), d, DefaultOptions)
	if err == nil || !strings.Contains(err.Error(), "folder "+missing+" does not exist") || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("error %v, want one naming the missing folder %s", err, missing)
	}
}

// Replayed power is labelled replayed, not simulated (run.json's simulated
// is true for a replay: the power was not measured in this run).
func TestTitleLabelsReplayedPower(t *testing.T) {
	run := sampleRun(t)
	run.Meta.Telemetry.Source = "replay"
	run.Meta.Engine.Kind = "vllm"
	d, err := Prepare(run, sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Title, "REPLAYED POWER · ") || strings.Contains(d.Title, "SIMULATED") {
		t.Errorf("title %q", d.Title)
	}
	run.Meta.Engine.Kind = "sim"
	if d, _ = Prepare(run, sampleResults()); !strings.HasPrefix(d.Title, "SIMULATED ENGINE · REPLAYED POWER · ") {
		t.Errorf("title %q", d.Title)
	}
}

// The power panel names what its power covers: the sample run's devices
// are GPUs (no domain: format v1's default); the same samples described
// as node power are titled node, never GPU; both kinds together name
// both.
func TestPowerTitleNamesTheBoundary(t *testing.T) {
	for _, c := range []struct {
		name   string
		domain func(i int) string
		want   string
	}{
		{"no domain", func(int) string { return "" }, "GPU"},
		{"node", func(int) string { return record.DomainNode }, "node"},
		{"gpu and cpu", func(i int) string { return []string{record.DomainGPU, record.DomainCPU}[i%2] }, "GPU + CPU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, err := archive.Load(filepath.Join("..", "archive", "testdata", "sample-run"))
			if err != nil {
				t.Fatal(err)
			}
			devs := run.Meta.Hardware.Devices
			if len(devs) < 2 && c.name == "gpu and cpu" {
				t.Skip("the sample run has one device")
			}
			for i := range devs {
				devs[i].Domain = c.domain(i)
			}
			d, err := Prepare(run, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Boundary != c.want {
				t.Errorf("boundary %q, want %q", d.Boundary, c.want)
			}
		})
	}
}
