package htmlreport

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// base is the synthetic runs' start, in Unix seconds.
const base = 1.7e9

// Hostile user input: a model name, a label and a device name that would
// run a script or load an image if written as markup.
const (
	xssModel  = `sim/<script>window.xssFired=1</script>`
	xssLabel  = `<img src=x onerror="window.xssFired=2">chat`
	xssDevice = `GPU "A" </td></tr><script>window.xssFired=3</script>`
)

// synthRun writes and loads an archive with two devices sampled every
// 0.5 s over [0, 60] s after base: 100 W each, 300 W each over the formal
// stage; stages baseline [0,5], startup [5,15] with warm-up [12,15]
// inside, formal [15,45], release [45,55]; the engine exits at 46. 300
// formal requests (and a 301st answered at 45), the i-th sent at 15 + 0.09 i, first token 20 ms later,
// done 0.5 s after that, 50 tokens at even times; /metrics scrapes of the
// running and waiting requests and KV usage every second of the formal
// stage. model names the engine's model.
func synthRun(t *testing.T, dir, runID, model string) *record.Run {
	t.Helper()
	st := func(n string, a, b float64) record.Stage {
		return record.Stage{Name: n, Start: base + a, End: base + b}
	}
	meta := record.Meta{RunID: runID, Simulated: true, StartedAt: base, EndedAt: base + 60,
		Profile:    record.ProfileRef{Name: "benchmark-1.5", Version: 1, SHA256: "abc123", Source: "builtin"},
		Parameters: map[string]any{"window": 100.0, "cv_max": 0.03, "release_hold": 5.0},
		Engine:     record.EngineInfo{Kind: "sim", Version: "0.1.0", Model: model, Precision: "bf16", Command: []string{"joulebench-sim", "--model", model}},
		RequestSet: record.RequestSet{Source: "builtin:chat", Count: 300, SHA256: "def456"},
		Hardware: record.Hardware{Devices: []record.Device{
			{ID: "gpu0", Name: xssDevice, Method: "counter", Simulated: true}, {ID: "gpu1", Name: "Simulated H100", Method: "counter", Simulated: true}}},
		Host:      record.HostInfo{Hostname: "host-1", OS: "linux", Arch: "amd64", CPUs: 2},
		Telemetry: record.TelemetryInfo{Source: "sim", IntervalS: 0.5, Simulated: true},
		Status:    record.StatusComplete,
		Stages:    []record.Stage{st("baseline", 0, 5), st("warmup", 12, 15), st("startup", 5, 15), st("formal", 15, 45), st("release", 45, 55)},
		Events:    []record.Event{{Name: "engine_exited", T: base + 46}},
		Labels:    map[string]string{"scenario": xssLabel, "model_params": "8e9"},
	}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	power := func(k float64) float64 {
		if k >= 15 && k <= 45 {
			return 300
		}
		return 100
	}
	for _, dev := range []string{"gpu0", "gpu1"} {
		e := 0.0
		for k := 0; k <= 120; k++ {
			tk := float64(k) / 2
			if k > 0 {
				e += (power(tk-0.5) + power(tk)) / 2 * 0.5
			}
			if err := w.AppendPower(record.PowerSample{T: base + tk, Device: dev, PowerW: power(tk), EnergyJ: e, HasEnergy: true, MemUsedBytes: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 300 {
		sent := base + 15 + 0.09*float64(i)
		first := sent + 0.02
		times := make([]float64, 50)
		for j := range times {
			times[j] = first + 0.5*float64(j)/49
		}
		r := record.Request{ID: "r" + strconv.Itoa(i), Phase: "formal", SentAt: sent, FirstTokenAt: first, DoneAt: first + 0.5,
			PromptTokens: 100, OutputTokens: 50, TokensSource: "usage", OK: true, TokenTimes: times}
		if err := w.AppendRequest(r); err != nil {
			t.Fatal(err)
		}
	}
	// A last request answered as the formal stage ends: the stage ends at
	// its last response (the reader holds the stage to its requests). It
	// succeeds, so that no failed request flags the run out of the
	// comparison's statistics and frontier.
	late := make([]float64, 50)
	for j := range late {
		late[j] = base + 44.5 + 0.5*float64(j)/49
	}
	if err := w.AppendRequest(record.Request{ID: "late", Phase: "formal", SentAt: base + 44.48, FirstTokenAt: base + 44.5, DoneAt: base + 45,
		PromptTokens: 100, OutputTokens: 50, TokensSource: "usage", OK: true, TokenTimes: late}); err != nil {
		t.Fatal(err)
	}
	for k := 15; k <= 45; k++ {
		err := w.AppendEngineMetrics(
			record.EngineMetric{T: base + float64(k), Name: "vllm:num_requests_running", Value: 6},
			record.EngineMetric{T: base + float64(k), Name: "vllm:num_requests_waiting", Value: 0},
			record.EngineMetric{T: base + float64(k), Name: "vllm:kv_cache_usage_perc", Value: 0.25})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// evaluate evaluates a run with the built-in benchmark-1.5 profile, as
// `joulebench report` does.
func evaluate(t *testing.T, run *record.Run) RunInput {
	t.Helper()
	src, name, err := workflow.ReadProfile("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, name, workflow.Options{Overrides: map[string]string{"release_hold": "5s"}})
	if err != nil {
		t.Fatal(err)
	}
	run.ClampOpenStages()
	res, evalErr := workflow.Evaluate(context.Background(), l, run)
	if res == nil {
		t.Fatalf("no results: %v", evalErr)
	}
	st := report.Stages(run, res, l.Profile.StageEnergy)
	return RunInput{Run: run, Results: res, Stages: &st, Params: l.Profile.Parameters, EvalErr: evalErr}
}

// writeFile writes a page to a file in dir.
func writeFile(t *testing.T, dir, name string, write func(f *os.File) error) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
