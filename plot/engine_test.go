package plot

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// withEngine adds scrapes of an engine's three gauges to the sample run
// every 5 s from 0 to 60 s (x = seconds since base): running x/5 (2
// engines, half each), waiting 1, KV usage 0.5 (as a fraction).
func withEngine(run *record.Run, running, waiting, kv string) {
	for k := 0; k <= 12; k++ {
		ts := base + float64(k)*5
		for e := range 2 {
			l := map[string]string{"engine": fmt.Sprint(e)}
			run.EngineMetrics = append(run.EngineMetrics, record.EngineMetric{T: ts, Name: running, Labels: l, Value: float64(k) / 2})
		}
		run.EngineMetrics = append(run.EngineMetrics, record.EngineMetric{T: ts, Name: waiting, Value: 1})
		if kv != "" {
			run.EngineMetrics = append(run.EngineMetrics, record.EngineMetric{T: ts, Name: kv, Value: 0.5})
		}
	}
}

// The engine panels, for each engine's names: the running batch summed
// over engines (at x = 25 s, k = 5: 2.5 + 2.5 = 5), the queue, the KV
// usage in % (0.5 → 50); the figure gets two more panels (their titles
// say which line is which), and nothing overlaps. A llama.cpp build without the KV gauge
// gets the batch panel only.
func TestEnginePanels(t *testing.T) {
	for _, c := range []struct {
		engine, running, waiting, kv string
		panels                       int
	}{
		{"vllm", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", 5},
		{"sglang", "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", 5},
		{"llamacpp", "llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio", 5},
		{"llamacpp without KV", "llamacpp:requests_processing", "llamacpp:requests_deferred", "", 4},
		{"sim", "sim:num_requests_running", "sim:num_requests_waiting", "sim:kv_cache_usage_perc", 5},
	} {
		t.Run(c.engine, func(t *testing.T) {
			run := sampleRun(t)
			withEngine(run, c.running, c.waiting, c.kv)
			d, err := Prepare(run, sampleResults())
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Engine.Running) != 13 || !slices.Contains(d.Engine.Running, XY{25, 5}) {
				t.Errorf("running = %v, want 13 points with {25 5}", d.Engine.Running)
			}
			if len(d.Engine.Waiting) != 13 || d.Engine.Waiting[0] != (XY{0, 1}) {
				t.Errorf("waiting = %v", d.Engine.Waiting)
			}
			if (c.kv == "") != (len(d.Engine.KV) == 0) || (c.kv != "" && d.Engine.KV[3] != (XY{15, 50})) {
				t.Errorf("KV = %v", d.Engine.KV)
			}
			for _, opt := range []Options{DefaultOptions, {Width: 800, Height: 600}, {Width: 300, Height: 300}} {
				l, err := LayoutOf(d, opt)
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Panels) != c.panels {
					t.Errorf("%d panels, want %d", len(l.Panels), c.panels)
				}
				checkLayout(t, fmt.Sprintf("%s %dx%d", c.engine, opt.Width, opt.Height), l)
			}
			for _, f := range Formats {
				var buf bytes.Buffer
				if err := Render(&buf, d, f, DefaultOptions); err != nil || buf.Len() == 0 {
					t.Errorf("render %s: %v", f, err)
				}
			}
		})
	}
}

// Without scrapes the figure is as before (three panels, no note); with
// scrapes of unknown names only, a note says so.
func TestEnginePanelsAbsent(t *testing.T) {
	run := sampleRun(t)
	d, err := Prepare(run, sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := LayoutOf(d, DefaultOptions); len(l.Panels) != 3 {
		t.Errorf("no scrapes: %d panels, want 3", len(l.Panels))
	}
	run.EngineMetrics = []record.EngineMetric{{T: base + 1, Name: "vllm:num_preemptions_total", Value: 1}}
	d, err = Prepare(run, sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := LayoutOf(d, DefaultOptions); len(l.Panels) != 3 || !slices.ContainsFunc(d.Notes, func(n string) bool { return n != "" && bytes.Contains([]byte(n), []byte("engine /metrics")) }) {
		t.Errorf("unknown names: %d panels, notes %v", len(l.Panels), d.Notes)
	}
}
