package importer

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/measure"
)

// mlperfRun is a run directory of the fixture submission
// (testdata/mlperf/README.md).
func mlperfRun(scenario, run string) string {
	return filepath.Join("testdata", "mlperf", "results", "h200x8", "llama3.1-8b", scenario, "performance", run)
}

// The runs of an MLPerf power submission imported as the help says
// (spl.txt and --loadgen only): exit 0, the model and scenario from the
// logs and their layout, the output tokens from the loadgen's token rate
// × the power window, node average power within 0.05 % of MLPerf's own
// figure (the plain mean of the readings > 0 strictly inside the window)
// and node J/token within 0.1 % of watts over tokens per second.
//
// Offline run_1 (1 Hz, 12:00:00 .. 12:00:22; window 12:00:01.5 ..
// 12:00:21.5, 20 s): readings inside are t = 2 .. 21 without the failed
// t = 15, 19 readings, 17 × 5000 + 5030 + 4980 = 95010 W,
// MLPerf's mean 95010 / 19 = 5000.526316 W. Trapezoid: 20 s × 5000 W =
// 100000 J, plus [9,10] +15, [10,11] +5, [11,12] -10 (the 2 s gap over
// the failed reading is 5000 W at both ends) = 100010 J, 5000.5 W
// (0.00053 % from MLPerf's). Tokens: 250000 tokens/s × 20 s = 5,000,000,
// above the 4,194,304 one request may carry: two synthetic requests of
// 2,500,000. J/token 100010 / 5e6 = 0.020002; MLPerf's watts over
// tokens/s 5000.526316 / 250000 = 0.0200021053 (0.00053 %).
//
// Server run_1 (1 Hz, 12:10:00 .. 12:10:21; window 12:10:00.25 ..
// 12:10:20.25, 20 s): readings inside t = 1 .. 20, 19 × 4000 + 4008 =
// 80008 W, mean 4000.4 W; trapezoid 80000 + [4,5] +4 + [5,6] +4 = 80008
// J, 4000.4 W. Tokens 1999.5 × 20 = 39990, one request. J/token 80008 /
// 39990 = 2.000700175; watts over tokens/s 4000.4 / 1999.5 = 2.000700175.
func TestImportMLPerfSubmission(t *testing.T) {
	for _, c := range []struct {
		scenario         string
		mlperfW, tokRate float64
		energyJ          float64
		tokens           []int
	}{
		{"Offline", 95010.0 / 19, 250000, 100010, []int{2500000, 2500000}},
		{"Server", 80008.0 / 20, 1999.5, 80008, []int{39990}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			dir := mlperfRun(c.scenario, "run_1")
			q := Request{Format: "ptdaemon", File: filepath.Join(dir, "spl.txt"), Loadgen: filepath.Join(dir, "mlperf_log_detail.txt"),
				Out: filepath.Join(t.TempDir(), "run"), Domain: record.DomainGPU, Profile: "benchmark-1.0"}
			rec, err := Import(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if s := q.Summary(rec); !strings.Contains(s, "worked out from the loadgen") || strings.Contains(s, "model:") || strings.Contains(s, "RANGING") {
				t.Errorf("summary %q", s)
			}
			run, err := archive.LoadData(q.Out)
			if err != nil {
				t.Fatal(err)
			}
			m := run.Meta
			if m.Engine.Kind != EngineKind || m.Engine.Model != "llama3.1-8b" || m.Labels["scenario"] != c.scenario ||
				m.Labels["mlperf_result_validity"] != "VALID" || m.Labels["mlperf_run"] != "" {
				t.Errorf("engine %+v, labels %v", m.Engine, m.Labels)
			}
			// A whole node at the wall (5 kW here) is bounded by the
			// profiles' node bound (power_sanity_max_node_w), not by an
			// override archived with the import.
			if _, ok := m.Parameters["power_sanity_max_w"]; ok {
				t.Errorf("parameters %v: the import overrides the power bound", m.Parameters)
			}
			total := 0
			if len(run.Requests) != len(c.tokens) {
				t.Fatalf("%d requests, want %d", len(run.Requests), len(c.tokens))
			}
			for i, r := range run.Requests {
				if r.OutputTokens != c.tokens[i] || !r.Synthetic {
					t.Errorf("request %d: %+v, want %d tokens", i, r, c.tokens[i])
				}
				total += r.OutputTokens
			}
			st, _ := m.StageByName("formal")
			pd, err := measure.NewPowerData(run.Power)
			if err != nil {
				t.Fatal(err)
			}
			e, err := pd.Energy(st.Start, st.End, "trapz")
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(e-c.energyJ) > 1e-6 {
				t.Errorf("energy %v J, want %v", e, c.energyJ)
			}
			avg := e / (st.End - st.Start)
			if rel := math.Abs(avg-c.mlperfW) / c.mlperfW; rel > 0.0005 {
				t.Errorf("average power %v W is %.4f %% from MLPerf's %v W (limit 0.05 %%)", avg, rel*100, c.mlperfW)
			}
			jpt, want := e/float64(total), c.mlperfW/c.tokRate
			if rel := math.Abs(jpt-want) / want; rel > 0.001 {
				t.Errorf("J/token %v is %.4f %% from watts over tokens/s %v (limit 0.1 %%)", jpt, rel*100, want)
			}
		})
	}
}

// --output-tokens and --model override what the logs say.
func TestImportMLPerfOverrides(t *testing.T) {
	dir := mlperfRun("Server", "run_1")
	q := Request{Format: "ptdaemon", File: filepath.Join(dir, "spl.txt"), Loadgen: filepath.Join(dir, "mlperf_log_detail.txt"),
		Out: filepath.Join(t.TempDir(), "run"), Profile: "benchmark-1.0", OutputTokens: 40000, Model: "Llama-3.1-8B-Instruct"}
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Engine.Model != "Llama-3.1-8B-Instruct" || len(run.Requests) != 1 || run.Requests[0].OutputTokens != 40000 ||
		!strings.Contains(strings.Join(run.Meta.Import.Notes, "\n"), "--output-tokens 40000 overrides the 39990 output tokens worked out from the loadgen") {
		t.Errorf("model %q, requests %+v, notes %q", run.Meta.Engine.Model, run.Requests, run.Meta.Import.Notes)
	}
}

// A ranging pass is refused unless --ranging is given; then the run is
// marked ranging in run.json: the engine kind (in every title and table)
// and a label.
func TestImportMLPerfRanging(t *testing.T) {
	dir := mlperfRun("Offline", "ranging")
	q := Request{Format: "ptdaemon", File: filepath.Join(dir, "spl.txt"), Loadgen: filepath.Join(dir, "mlperf_log_detail.txt"),
		Out: filepath.Join(t.TempDir(), "run"), Profile: "benchmark-1.0"}
	_, err := Import(context.Background(), q)
	if err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), "is a ranging run") ||
		!strings.Contains(err.Error(), `spl.txt:2: Mark "ranging"`) || !strings.Contains(err.Error(), "give --ranging") {
		t.Fatalf("ranging without --ranging: %v (exit %d)", err, exitcode.Of(err))
	}
	q.Ranging = true
	rec, err := Import(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Engine.Kind != "imported-ranging" || run.Meta.Labels["mlperf_run"] != "ranging" || !strings.Contains(q.Summary(rec), "RANGING run") {
		t.Errorf("engine %+v, labels %v", run.Meta.Engine, run.Meta.Labels)
	}
	// A ranging/ directory says so even without the Mark.
	if r, _ := ptd(context.Background(), strings.NewReader("Time,10-19-2025 12:00:01.000,Watts,10\n"), filepath.Join("x", "ranging", "spl.txt"),
		strings.NewReader(`:::MLLOG {"key": "power_begin", "value": "10-19-2025 12:00:00.000"}`+"\n"+`:::MLLOG {"key": "power_end", "value": "10-19-2025 12:00:02.000"}`+"\n"),
		filepath.Join("x", "ranging", "mlperf_log_detail.txt")); r == nil || !r.Ranging || !strings.Contains(r.RangingWhy, "directory named ranging") {
		t.Errorf("ranging/ directory: %+v", r)
	}
	q.Format, q.Ranging, q.Out = "csv", true, filepath.Join(t.TempDir(), "csv")
	if _, err := Import(context.Background(), q); err == nil || !strings.Contains(err.Error(), "--ranging is for ptdaemon") {
		t.Errorf("csv --ranging: %v", err)
	}
}

// The loadgen log's faults are named with file and line.
func TestReadLoadgenTokens(t *testing.T) {
	line := func(k, v string) string { return `:::MLLOG {"key": "` + k + `", "value": ` + v + `}` + "\n" }
	win := line("power_begin", `"10-19-2025 12:00:00.000"`) + line("power_end", `"10-19-2025 12:00:10.000"`)
	for _, c := range []struct {
		name, in string
		tokens   int
		err      string
	}{
		// 123.4 tokens/s × 10 s = 1234 tokens.
		{"offline", line("effective_scenario", `"Offline"`) + win + line("result_tokens_per_second", "123.4"), 1234, ""},
		// Server's rate is the completed one; the Offline key is not read.
		{"server", line("effective_scenario", `"Server"`) + win + line("result_tokens_per_second", "1") + line("result_completed_tokens_per_second", "50.05"), 501, ""},
		{"gptj inferred", line("effective_scenario", `"Offline"`) + win + line("result_inferred_tokens_per_second", "10"), 100, ""},
		{"no rate", line("effective_scenario", `"SingleStream"`) + win + line("result_tokens_per_second", "10"), 0, ""},
		{"negative rate", line("effective_scenario", `"Offline"`) + win + line("result_tokens_per_second", "-5"), 0, "detail.txt:4: result_tokens_per_second: -5 tokens/s is not a rate"},
		{"string rate", win + line("result_tokens_per_second", `"5"`), 0, "detail.txt:3: result_tokens_per_second: value is not a number"},
		{"bad time", line("power_begin", `"2025-10-19 12:00:00"`), 0, `detail.txt:1: power_begin: time "2025-10-19 12:00:00" is not MM-DD-YYYY`},
		{"1970", line("power_begin", `"01-01-1970 00:00:05.000"`), 0, "detail.txt:1: power_begin: time 5 (1970-01-01T00:00:05Z) is outside"},
		{"reversed", line("power_begin", `"10-19-2025 12:00:02.000"`) + line("power_end", `"10-19-2025 12:00:01.000"`), 0,
			"power_end 2025-10-19T12:00:01Z is not after power_begin 2025-10-19T12:00:02Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := ReadLoadgen(context.Background(), strings.NewReader(c.in), "detail.txt")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n, _, err := w.Tokens("detail.txt")
			if err != nil || n != c.tokens {
				t.Errorf("tokens %d, %v; want %d", n, err, c.tokens)
			}
		})
	}
}

// An accuracy run has no power to import.
func TestImportRefusesAccuracyRun(t *testing.T) {
	det := `:::MLLOG {"key": "effective_test_mode", "value": "AccuracyOnly"}` + "\n" +
		`:::MLLOG {"key": "power_begin", "value": "10-19-2025 12:00:00.000"}` + "\n" + `:::MLLOG {"key": "power_end", "value": "10-19-2025 12:00:02.000"}` + "\n"
	_, err := PTD(strings.NewReader("Time,10-19-2025 12:00:01.000,Watts,10\n"), "spl.txt", strings.NewReader(det), "detail.txt")
	if err == nil || !strings.Contains(err.Error(), `effective_test_mode is "AccuracyOnly"`) {
		t.Errorf("error %v", err)
	}
}

// A PTDaemon reading above 100 kW or infinite is refused with its line;
// NaN stays a failed reading (a gap).
func TestReadPTDBounds(t *testing.T) {
	const ok = "Time,10-19-2025 12:00:00.000,Watts,10\n"
	for _, c := range []struct{ in, want string }{
		{ok + "Time,10-19-2025 12:00:01.000,Watts,250000\n", "spl.txt:2: watts: power 250000 W is above 100000 W"},
		{ok + "Time,10-19-2025 12:00:01.000,Watts,+Inf\n", "spl.txt:2: watts: power +Inf W is not finite"},
		{"Time,01-01-1970 00:00:01.000,Watts,10\n", "spl.txt:1: time 1 (1970-01-01T00:00:01Z) is outside"},
	} {
		if _, _, err := ReadPTD(strings.NewReader(c.in), "spl.txt"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// MLPerf's power client marks its passes SESSION_ranging and
// SESSION_testing (the real v4.1 logs: "2024-07-17_01-39-59_ranging");
// a bare "ranging" is also a ranging pass.
func TestRangingMark(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"Time,07-17-2024 08:40:40.224,Watts,2352.8,Volts,239.19,Amps,3.40,PF,0.96,Mark,2024-07-17_01-39-59_ranging,Ch1,Watts,1", true},
		{"Time,07-17-2024 09:44:23.305,Watts,2406.5,Volts,239.17,Amps,3.48,PF,0.96,Mark,2024-07-17_01-39-59_testing,Ch1,Watts,1", false},
		{"Time,10-19-2025 12:00:00.000,Watts,10,Mark,RANGING", true},
		{"Time,10-19-2025 12:00:00.000,Watts,10,Mark,notranging", false},
		{"Time,10-19-2025 12:00:00.000,Watts,10", false},
	} {
		if _, got := rangingMark(strings.Split(c.line, ",")); got != c.want {
			t.Errorf("%q: ranging %v, want %v", c.line, got, c.want)
		}
	}
}

// Files named relative to the working directory, as when import is run
// from within run_1/ or ranging/ (import ptdaemon spl.txt --loadgen
// mlperf_log_detail.txt), still have the submission's layout above them.
func TestMLPerfLayoutRelative(t *testing.T) {
	t.Chdir(mlperfRun("Offline", "ranging"))
	if m := modelFromPath("mlperf_log_detail.txt", "Offline"); m != "llama3.1-8b" {
		t.Errorf("model %q, want llama3.1-8b", m)
	}
	if !inDir("spl.txt", "ranging") || inDir("spl.txt", "run_1") {
		t.Errorf("spl.txt in ranging/: %v, in run_1/: %v", inDir("spl.txt", "ranging"), inDir("spl.txt", "run_1"))
	}
}
