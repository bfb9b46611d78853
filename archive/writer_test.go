package archive

import (
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func testMeta() record.Meta {
	return record.Meta{
		RunID:     "r-001",
		Simulated: true,
		Profile:   record.ProfileRef{Name: "benchmark-1.5", Version: 1, SHA256: strings.Repeat("ab", 32), Source: "builtin"},
		// JSON numbers read back as float64, so parameters hold float64s.
		Parameters: map[string]any{"window": 100.0, "cv_max": 0.03, "sample_interval": "1s", "flag": true},
		Engine: record.EngineInfo{
			Kind: "vllm", Version: "0.6.3", URL: "http://127.0.0.1:8000", API: "openai-chat", Managed: false,
			Command: []string{"vllm", "serve", "m", "--api-key", "[REDACTED]"}, Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"},
			Model: "m", ServedModel: "m", Revision: "abc", Precision: "bfloat16", ContextLength: 8192, TensorParallel: 2,
			Extra: map[string]any{"gpu_memory_utilization": 0.9},
		},
		RequestSet: record.RequestSet{Source: "s.jsonl", Format: "jsonl", Count: 2, SHA256: "00", Seed: 7},
		Hardware: record.Hardware{Devices: []record.Device{
			{ID: "gpu0", Name: "H100", UUID: "GPU-0", Method: "counter"},
			{ID: "node,1 \"gpu\"", Name: "H100", UUID: "GPU-1", Method: "power"},
		}, Driver: "550.54", Chip: "H100"},
		Host:      record.HostInfo{Hostname: "h", OS: "linux", Arch: "amd64", CPUs: 2},
		Software:  map[string]string{"joulebench": "dev"},
		Telemetry: record.TelemetryInfo{Source: "nvml", IntervalS: 0.1},
		StartedAt: 1717405199.123456789,
		Stages:    []record.Stage{{Name: "baseline", Start: 1717405200, End: 1717405210.000000001}},
		Events:    []record.Event{{Name: "engine_ready", T: 1717405220.5}},
		Labels:    map[string]string{"scenario": "<chat & code>"},
	}
}

// Floats chosen to catch any lossy formatting: many digits, tiny, huge,
// negative zero, values with no short decimal form.
var trickyFloats = []float64{
	1717405200.123456789, 0.1, 1.0 / 3, 1e-7, 5e-324, math.MaxFloat64, math.Copysign(0, -1), 123456789012345678, 2.5e-300, 0,
}

func testPower() []record.PowerSample {
	var ps []record.PowerSample
	for i, f := range trickyFloats {
		// Power within a GPU's physical bound (5 kW), keeping the digits.
		f = math.Mod(f, 5000)
		ps = append(ps, record.PowerSample{T: 1717405200 + float64(i)/7, Device: "gpu0", PowerW: f, EnergyJ: f * 3, HasEnergy: i%2 == 0, MemUsedBytes: int64(i) << 30}, record.PowerSample{T: 1717405200 + float64(i)/7, Device: "node,1 \"gpu\"", PowerW: 301.25 + f/1e300, MemUsedBytes: -1})
	}
	// Times go on (the reader refuses a device's time going back).
	ps = append(ps, record.PowerSample{T: 1717405202, Device: "gpu0", PowerW: 0, EnergyJ: 0, HasEnergy: true, MemUsedBytes: 0}, record.PowerSample{T: 1717405202.5, Device: "gpu0", PowerW: 0.1, MemUsedBytes: 1073741824})
	return ps
}

func testRequests() []record.Request {
	return []record.Request{
		{
			ID: "f0", Phase: "formal", PromptID: "p0", SentAt: 1717405210.000000123, FirstTokenAt: 1717405210.2, DoneAt: 1717405211.1,
			PromptTokens: 12, OutputTokens: 3, ReasoningTokens: 1, TokensSource: "usage", OutputChars: 11, OK: true,
			TokenTimes: []float64{1717405210.2, 1717405210.7, 1717405211 + 1/30.0}, TokenCounts: []int{1, 1, 1},
			EngineTimings: map[string]float64{"eval_count": 3, "eval_duration": 912345678},
			MaxTokens:     512, Engine: "ollama",
		},
		{ID: "f1", Phase: "formal", SentAt: 1717405210.5, OutputTokens: 0, OK: false, Error: "HTTP 500: <html> & \"quotes\"\nnewline \u2028 é"},
		{ID: "w0", Phase: "warmup", SentAt: 1717405209, FirstTokenAt: 1717405209.1, DoneAt: 1717405209.2, OutputTokens: 1, TokensSource: "estimate", OK: true, TokenTimes: []float64{1717405209.1}},
	}
}

func testMetrics() []record.EngineMetric {
	return []record.EngineMetric{
		{T: 1717405210.25, Name: "vllm:num_requests_running", Labels: map[string]string{"model_name": "m"}, Value: 3},
		{T: 1717405210.25, Name: "vllm:gpu_cache_usage_perc", Value: 0.123456789012345},
	}
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "nested", "r-001") // parents do not exist yet
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	if w.Dir() != dir || w.Path(EngineLogFile) != filepath.Join(dir, "engine.log") {
		t.Errorf("Dir/Path = %q, %q", w.Dir(), w.Path(EngineLogFile))
	}
	power := testPower()
	if err := w.AppendPower(power[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendPower(power[5:]...); err != nil {
		t.Fatal(err)
	}
	for _, r := range testRequests() {
		if err := w.AppendRequest(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AppendEngineMetrics(testMetrics()...); err != nil {
		t.Fatal(err)
	}
	if err := w.UpdateMeta(func(m *record.Meta) {
		m.Status = record.StatusComplete
		m.EndedAt = 1717405300.75
		m.Stages = append(m.Stages, record.Stage{Name: "formal", Start: 1717405210, End: 1717405211.1})
		m.Events = append(m.Events, record.Event{Name: "throttled", T: 1717405295})
		m.FormatVersion = 99 // ignored: the version is the writer's
	}); err != nil {
		t.Fatal(err)
	}
	passed := false
	res := record.Results{
		RunID: "r-001", Simulated: true, Profile: testMeta().Profile, Excluded: true, ExcludeReason: "release_not_closed",
		Order: []string{"e_formal", "steady"},
		Values: map[string]record.Result{
			"e_formal": {Kind: "metric", Value: 6170.5, Unit: "J", Description: "formal energy"},
			"steady":   {Kind: "check", Value: false, Severity: "warn", Passed: &passed, Message: "not steady"},
		},
	}
	if err := w.WriteResults(res); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := testMeta()
	wantMeta.FormatVersion = 1
	wantMeta.Status = record.StatusComplete
	wantMeta.EndedAt = 1717405300.75
	wantMeta.Stages = append(wantMeta.Stages, record.Stage{Name: "formal", Start: 1717405210, End: 1717405211.1})
	wantMeta.Events = append(wantMeta.Events, record.Event{Name: "throttled", T: 1717405295})
	res.FormatVersion = 1
	want := &record.Run{Dir: dir, Meta: wantMeta, Power: power, Requests: testRequests(), EngineMetrics: testMetrics(), Results: &res}
	for i := range want.Power { // the reader gives -1 for every empty mem cell
		if want.Power[i].MemUsedBytes < 0 {
			want.Power[i].MemUsedBytes = -1
		}
	}
	if !reflect.DeepEqual(got.Meta, want.Meta) {
		t.Errorf("meta:\n got %+v\nwant %+v", got.Meta, want.Meta)
	}
	if !reflect.DeepEqual(w.Meta(), want.Meta) {
		t.Errorf("w.Meta():\n got %+v\nwant %+v", w.Meta(), want.Meta)
	}
	if len(got.Power) != len(want.Power) {
		t.Fatalf("power: %d rows, want %d", len(got.Power), len(want.Power))
	}
	for i := range want.Power {
		g, e := got.Power[i], want.Power[i]
		// Compare bits, so that -0 vs 0 or a last-digit change shows.
		if math.Float64bits(g.T) != math.Float64bits(e.T) || math.Float64bits(g.PowerW) != math.Float64bits(e.PowerW) ||
			math.Float64bits(g.EnergyJ) != math.Float64bits(e.EnergyJ) && e.HasEnergy ||
			g.HasEnergy != e.HasEnergy || g.Device != e.Device || g.MemUsedBytes != e.MemUsedBytes ||
			!e.HasEnergy && g.EnergyJ != 0 {
			t.Errorf("power row %d:\n got %+v\nwant %+v", i, g, e)
		}
	}
	if !reflect.DeepEqual(got.Requests, want.Requests) {
		t.Errorf("requests:\n got %+v\nwant %+v", got.Requests, want.Requests)
	}
	if !reflect.DeepEqual(got.EngineMetrics, want.EngineMetrics) {
		t.Errorf("engine metrics:\n got %+v\nwant %+v", got.EngineMetrics, want.EngineMetrics)
	}
	if !reflect.DeepEqual(got.Results, want.Results) {
		t.Errorf("results:\n got %+v\nwant %+v", got.Results, want.Results)
	}
	if got.Dir != dir {
		t.Errorf("Dir = %q", got.Dir)
	}

	// The on-disk form: the documented header, empty cells, quoting, no
	// exponents, no temp files left behind.
	csvBytes, err := os.ReadFile(filepath.Join(dir, PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(csvBytes), "\n")
	for _, want := range []string{
		"t,device,power_w,energy_j,mem_used_bytes",
		"1717405202.5,gpu0,0.1,,1073741824",
		`1717405200.142857,"node,1 ""gpu""",301.25,,`,
		"1717405202,gpu0,0,0,0",
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("power.csv has no line %q:\n%s", want, csvBytes)
		}
	}
	if regexp.MustCompile(`[0-9][eE][-+]?[0-9]`).MatchString(strings.Join(lines[1:], "\n")) {
		t.Errorf("power.csv uses exponent notation:\n%s", csvBytes)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[engine_metrics.jsonl power.csv requests.jsonl results.json run.json]" {
		t.Errorf("run directory holds %v", names)
	}
}

func TestCreateNeverOverwrites(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunFile), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Create(dir, testMeta())
	want := fmt.Sprintf("archive: run directory %s already exists; a re-test is a new directory", dir)
	if err == nil || err.Error() != want {
		t.Fatalf("Create over an existing directory: %v, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("error does not match fs.ErrExist")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, RunFile)); string(b) != "precious" {
		t.Errorf("existing run.json changed to %q", b)
	}
	// An existing empty directory is refused too.
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Create(empty, testMeta()); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an empty directory: %v", err)
	}
	// And a second Create of a run just made.
	w, err := Create(filepath.Join(root, "new"), testMeta())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := Create(filepath.Join(root, "new"), testMeta()); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create: %v", err)
	}
}

func TestCreateDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	m := testMeta()
	m.FormatVersion = 7
	w, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's meta is copied, not shared.
	m.Labels["scenario"] = "changed"
	got := w.Meta()
	if got.FormatVersion != record.FormatVersion || got.Status != record.StatusRunning || got.Labels["scenario"] != "<chat & code>" {
		t.Errorf("meta after Create: version %d status %q labels %v", got.FormatVersion, got.Status, got.Labels)
	}
	// Meta returns a copy.
	got.Labels["scenario"] = "changed again"
	got.Stages[0].Name = "x"
	if w.Meta().Labels["scenario"] != "<chat & code>" || w.Meta().Stages[0].Name != "baseline" {
		t.Errorf("Meta() shares its maps or slices with the writer")
	}
	// run.json is on disk at once, readable, with status running, and the
	// power.csv header is flushed before any Flush call.
	onDisk, err := ReadMeta(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Status != record.StatusRunning || onDisk.FormatVersion != 1 {
		t.Errorf("run.json on disk: %+v", onDisk)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, PowerFile)); string(b) != powerHeader+"\n" {
		t.Errorf("power.csv before Flush = %q", b)
	}
	// A crash now (no Close) leaves a loadable archive.
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Power)+len(run.Requests)+len(run.EngineMetrics) != 0 || run.Results != nil {
		t.Errorf("fresh run loads with data: %+v", run)
	}
	w.Close()

	// A meta with nil stages and events is written with empty lists.
	dir2 := filepath.Join(t.TempDir(), "r2")
	w2, err := Create(dir2, record.Meta{RunID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	b, _ := os.ReadFile(filepath.Join(dir2, RunFile))
	if !strings.Contains(string(b), `"stages": []`) || !strings.Contains(string(b), `"events": []`) {
		t.Errorf("run.json with no stages:\n%s", b)
	}
}

func TestWriteResultsNeverOverwrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteResults(record.Results{RunID: "first"}); err != nil {
		t.Fatal(err)
	}
	err = w.WriteResults(record.Results{RunID: "second"})
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "results.json already exists") {
		t.Fatalf("second WriteResults: %v", err)
	}
	if err := WriteResultsFile(dir, record.Results{RunID: "third"}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteResultsFile over existing: %v", err)
	}
	res, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != "first" || res.FormatVersion != 1 || res.Order == nil || res.Values == nil {
		t.Errorf("results.json = %+v", res)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		// The status reserve stays until Close.
		if strings.HasPrefix(e.Name(), ".") && e.Name() != StatusReserveFile {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestAfterClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendRequest(testRequests()[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.AppendPower(testPower()[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendPower after Close: %v", err)
	}
	if err := w.AppendRequest(testRequests()[1]); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendRequest after Close: %v", err)
	}
	if err := w.AppendEngineMetrics(testMetrics()...); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendEngineMetrics after Close: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
	// The final status can still be written after the data files close.
	if err := w.UpdateMeta(func(m *record.Meta) { m.Status = record.StatusInterrupted; m.Reason = "interrupted by signal" }); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Status != record.StatusInterrupted || len(run.Requests) != 1 {
		t.Errorf("after close: status %q, %d requests", run.Meta.Status, len(run.Requests))
	}
}

func TestAppendRejectsUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	good := record.PowerSample{T: 1717405201, Device: "gpu0", PowerW: 1, MemUsedBytes: -1}
	for _, bad := range []record.PowerSample{
		{T: math.NaN(), Device: "gpu0"},
		{T: 1, Device: "gpu0", PowerW: math.Inf(1)},
		{T: 1, Device: "gpu0", EnergyJ: math.NaN(), HasEnergy: true},
		{T: 1, Device: ""},
		{T: 1, Device: "gpu\n0"},
	} {
		if err := w.AppendPower(good, bad); err == nil || !strings.Contains(err.Error(), "power.csv") {
			t.Errorf("AppendPower(%+v): %v", bad, err)
		}
	}
	// A NaN energy without HasEnergy is not written, so it is fine.
	if err := w.AppendPower(record.PowerSample{T: 1717405202, Device: "gpu0", EnergyJ: math.NaN(), MemUsedBytes: -1}); err != nil {
		t.Errorf("unused NaN energy: %v", err)
	}
	if err := w.AppendEngineMetrics(testMetrics()[0], record.EngineMetric{T: 1, Name: "x", Value: math.NaN()}); err == nil || !strings.Contains(err.Error(), "engine_metrics.jsonl") {
		t.Errorf("NaN engine metric: %v", err)
	}
	if err := w.AppendEngineMetrics(record.EngineMetric{T: 1, Value: 1}); err == nil {
		t.Errorf("engine metric with no name accepted")
	}
	if err := w.AppendRequest(record.Request{ID: "r9", TokenTimes: []float64{math.Inf(-1)}}); err == nil || !strings.Contains(err.Error(), `requests.jsonl: request "r9"`) {
		t.Errorf("request with -Inf: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing of a rejected call was written.
	if len(run.Power) != 1 || run.Power[0].T != 1717405202 || len(run.EngineMetrics) != 0 || len(run.Requests) != 0 {
		t.Errorf("rejected data was written: %+v", run)
	}
}

// TestWriteErrorNamesFile puts a data file on /dev/full, so that the flush
// fails as it would on a full disk.
func TestWriteErrorNamesFile(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	dir := filepath.Join(t.TempDir(), "r")
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	w.requests.f.Close()
	w.requests.f = full
	w.requests.bw.Reset(full)
	if err := w.AppendRequest(testRequests()[0]); err != nil {
		t.Fatal(err) // still buffered
	}
	err = w.Flush()
	if err == nil || !strings.Contains(err.Error(), "requests.jsonl") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Flush to a full disk: %v", err)
	}
	// The other files were still flushed, and the error sticks.
	if err := w.AppendPower(testPower()[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "requests.jsonl") {
		t.Errorf("Close after a write error: %v", err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Power) != 1 {
		t.Errorf("power.csv has %d rows, want 1", len(run.Power))
	}
}

func TestConcurrentAppends(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	m := testMeta()
	m.Hardware.Devices = append(m.Hardware.Devices, record.Device{ID: "gpu1"}) // the sampler's second device
	w, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	const (
		requesters  = 16
		perWorker   = 200
		samples     = 1000
		metricBatch = 50
	)
	var wg sync.WaitGroup
	wg.Go(func() { // the sampler: two devices per instant
		for i := range samples {
			t0 := 1717405200 + float64(i)*0.1
			if err := w.AppendPower(record.PowerSample{T: t0, Device: "gpu0", PowerW: float64(i), EnergyJ: float64(i) * 10, HasEnergy: true, MemUsedBytes: int64(i)}, record.PowerSample{T: t0, Device: "gpu1", PowerW: float64(i), MemUsedBytes: -1}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // the scraper
		for i := range metricBatch {
			if err := w.AppendEngineMetrics(record.EngineMetric{T: 1717405200 + float64(i), Name: "a", Value: 1}, record.EngineMetric{T: 1717405200 + float64(i), Name: "b", Value: 2}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // the executor's periodic flush and stage marks
		for i := range 50 {
			if err := w.Flush(); err != nil {
				t.Error(err)
			}
			if err := w.UpdateMeta(func(m *record.Meta) {
				m.Events = append(m.Events, record.Event{Name: fmt.Sprint("e", i), T: 1717405200 + float64(i)})
			}); err != nil {
				t.Error(err)
			}
			_ = w.Meta()
		}
	})
	for g := range requesters {
		wg.Go(func() {
			for i := range perWorker {
				r := record.Request{ID: fmt.Sprintf("g%d-%d", g, i), Phase: "formal", SentAt: 1717405201, FirstTokenAt: 1717405202, DoneAt: 1717405203, OutputTokens: i, OK: true,
					TokenTimes: []float64{1717405202, 1717405202.5, 1717405203}}
				if err := w.AppendRequest(r); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Requests) != requesters*perWorker {
		t.Errorf("%d requests, want %d", len(run.Requests), requesters*perWorker)
	}
	seen := map[string]bool{}
	for _, r := range run.Requests {
		if seen[r.ID] {
			t.Errorf("request %s twice", r.ID)
		}
		seen[r.ID] = true
	}
	if len(run.Power) != 2*samples {
		t.Fatalf("%d power rows, want %d", len(run.Power), 2*samples)
	}
	for i := 0; i < len(run.Power); i += 2 { // each AppendPower call stays whole and in order
		a, b := run.Power[i], run.Power[i+1]
		if a.Device != "gpu0" || b.Device != "gpu1" || a.T != b.T || a.PowerW != float64(i/2) {
			t.Fatalf("power rows %d,%d out of order: %+v %+v", i, i+1, a, b)
		}
	}
	if len(run.EngineMetrics) != 2*metricBatch {
		t.Errorf("%d engine metrics, want %d", len(run.EngineMetrics), 2*metricBatch)
	}
	if len(run.Meta.Events) != 1+50 {
		t.Errorf("%d events, want 51", len(run.Meta.Events))
	}
}
