package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/workflow"
)

const ptdFixture = "../../importer/testdata/ptd/"

type jsonResult struct {
	Value  any    `json:"value"`
	Note   string `json:"note"`
	Passed *bool  `json:"passed"`
}

// import ptdaemon, then analyze with the archived benchmark-1.0: the
// figures of the hand calculation in importer_test.go (trapezoid 9999.5 J
// over 10 s; 5000 tokens given), latency not applicable.
func TestImportPTDaemonThenAnalyze(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mlperf-run")
	out, errOut, code := runCLI(t, "import", "ptdaemon", ptdFixture+"spl.txt", "--loadgen", ptdFixture+"mlperf_log_detail.txt",
		"--output-tokens", "5000", "--out", dir)
	if code != exitOK || !strings.Contains(out, "15 samples, 1 failed") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	// The profile is archived where analyze looks for it.
	if _, err := os.Stat(filepath.Join(dir, workflow.ProfileFile)); err != nil {
		t.Errorf("no archived profile: %v", err)
	}
	out, errOut, code = runCLI(t, "analyze", dir, "--format", "json")
	if code != exitOK {
		t.Fatalf("analyze: exit %d\n%s\n%s", code, out, errOut)
	}
	var res map[string]jsonResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// 9999.5 J / 10 s = 999.95 W; 9999.5 J / 5000 tokens = 1.9999 J/token.
	// PTDaemon measures the whole system at the wall: node figures, and
	// no GPU figure (never "GPU" for node power).
	if v, _ := res["avg_node_power_w"].Value.(float64); math.Abs(v-999.95) > 1e-9 {
		t.Errorf("average power %v, want 999.95", res["avg_node_power_w"])
	}
	if v, _ := res["node_j_per_token"].Value.(float64); math.Abs(v-1.9999) > 1e-12 {
		t.Errorf("node_j_per_token %+v, want 1.9999", res["node_j_per_token"])
	}
	for _, n := range []string{"avg_gpu_power_w", "formal_j_per_token"} {
		if r := res[n]; r.Value != nil {
			t.Errorf("%s = %+v, want not applicable (no GPU power in a PTDaemon log)", n, r)
		}
	}
	for _, n := range []string{"ttft_p50_ms", "e2e_latency_p99_ms", "tpot_ms", "itl_p50_ms"} {
		if r := res[n]; r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
			t.Errorf("%s = %+v, want not applicable", n, r)
		}
	}
	for _, n := range []string{"tokens_counted", "power_valid_node", "power_measured"} {
		if r := res[n]; r.Passed == nil || !*r.Passed {
			t.Errorf("%s = %+v, want passed", n, r)
		}
	}
	// benchmark-1.5 leaves the synthetic request out of latency too; with
	// no baseline or release stage its lifecycle values are not applicable.
	out, errOut, _ = runCLI(t, "analyze", dir, "--profile", "benchmark-1.5", "--format", "json")
	res = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, n := range []string{"ttft_p50_ms", "e2e_latency_p50_ms", "full_lifecycle_j_per_token"} {
		if r := res[n]; r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
			t.Errorf("benchmark-1.5 %s = %+v, want not applicable", n, r)
		}
	}
	// A second import into the same directory is refused.
	_, errOut, code = runCLI(t, "import", "ptdaemon", ptdFixture+"spl.txt", "--loadgen", ptdFixture+"mlperf_log_detail.txt", "--out", dir)
	if code != exitInvalid || !strings.Contains(errOut, "already exists") {
		t.Errorf("second import: exit %d, %s", code, errOut)
	}
}

func TestImportFlagErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "ptdaemon", ptdFixture + "spl.txt", "--out", out}, "--loadgen"},
		{[]string{"import", "csv", ptdFixture + "spl.txt", "--out", out}, "--map"},
		{[]string{"import", "xml", ptdFixture + "spl.txt", "--out", out}, `unknown format "xml"`},
		{[]string{"import", "ptdaemon", ptdFixture + "spl.txt"}, "--out DIR is required"},
		{[]string{"import", "csv", ptdFixture + "spl.txt", "--out", out, "--map", "time=a,watts=b", "--begin", "1"}, "both --begin and --end"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != exitInvalid || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, exitInvalid, c.want)
		}
	}
}

// PTDaemon's failed readings are gaps the power audit sees: ten -1
// readings in a row inside the window leave an 11 s hole between samples
// (t = 9 to 20), above max_sample_gap (3 × the 1 s interval = 3 s), so the
// audit excludes the run, naming the gap.
func TestImportPTDaemonFailedReadingsAreGaps(t *testing.T) {
	tmp := t.TempDir()
	var spl strings.Builder
	for i := range 30 {
		w := "500"
		if i >= 10 && i < 20 {
			w = "-1"
		}
		fmt.Fprintf(&spl, "Time,10-19-2025 12:00:%02d.000,Watts,%s,Volts,230\n", i, w)
	}
	det := `:::MLLOG {"key": "power_begin", "value": "10-19-2025 12:00:02.000"}` + "\n" +
		`:::MLLOG {"key": "power_end", "value": "10-19-2025 12:00:27.000"}` + "\n"
	writeFile(t, filepath.Join(tmp, "spl.txt"), spl.String())
	writeFile(t, filepath.Join(tmp, "detail.txt"), det)
	dir := filepath.Join(tmp, "run")
	if _, errOut, code := runCLI(t, "import", "ptdaemon", filepath.Join(tmp, "spl.txt"), "--loadgen", filepath.Join(tmp, "detail.txt"), "--out", dir, "--output-tokens", "100"); code != exitOK {
		t.Fatalf("import: exit %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "analyze", dir, "--format", "json")
	var res map[string]struct {
		Value   any    `json:"value"`
		Passed  *bool  `json:"passed"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	if c := res["power_valid_node"]; c.Passed == nil || *c.Passed || !strings.Contains(c.Message, "device node0: 11 s without samples in stage formal") {
		t.Errorf("exit %d, power_valid_node %+v; want the 11 s gap named", code, c)
	}
	if r := res["node_j_per_token"]; r.Value != nil {
		t.Errorf("node_j_per_token %+v: want not applicable after the gap", r)
	}
}

// A CSV and a Prometheus export with --begin/--end: the window is the one
// given; two devices at constant 100 W and 50 W → 150 W on average.
func TestImportCSVAndPrometheus(t *testing.T) {
	tmp := t.TempDir()
	var csv, prom strings.Builder
	csv.WriteString("ts,gpu,w\n")
	var v0, v1 []string
	const t0 = 1760875200 // 2025-10-19T12:00:00Z: imports take absolute times
	for i := range 11 {
		fmt.Fprintf(&csv, "%d,g0,100\n%d,g1,50\n", t0+i, t0+i)
		v0 = append(v0, fmt.Sprintf(`[%d,"100"]`, t0+i))
		v1 = append(v1, fmt.Sprintf(`[%d,"50"]`, t0+i))
	}
	fmt.Fprintf(&prom, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"gpu":"0"},"values":[%s]},{"metric":{"gpu":"1"},"values":[%s]}]}}`,
		strings.Join(v0, ","), strings.Join(v1, ","))
	writeFile(t, filepath.Join(tmp, "p.csv"), csv.String())
	writeFile(t, filepath.Join(tmp, "q.json"), prom.String())
	for _, args := range [][]string{
		{"import", "csv", filepath.Join(tmp, "p.csv"), "--map", "time=ts,device=gpu,watts=w"},
		{"import", "prometheus", filepath.Join(tmp, "q.json")},
	} {
		dir := filepath.Join(tmp, args[1])
		args = append(args, "--out", dir, "--begin", "1760875202", "--end", "1760875208", "--output-tokens", "300")
		if _, errOut, code := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		out, errOut, _ := runCLI(t, "analyze", dir, "--format", "json")
		var res map[string]jsonResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		// 150 W × 6 s = 900 J over 300 tokens = 3 J/token.
		if res["avg_gpu_power_w"].Value != 150.0 || res["formal_j_per_token"].Value != 3.0 || res["avg_node_power_w"].Value != nil {
			t.Errorf("%s: power %+v, J/token %+v; want 150 W, 3 J/token", args[1], res["avg_gpu_power_w"], res["formal_j_per_token"])
		}
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The runs of an MLPerf power submission imported as import's help says
// (run_1/spl.txt with --loadgen run_1/mlperf_log_detail.txt, nothing
// else), then analyzed: exit 0, node average power within 0.05 % of
// MLPerf's plain mean and node J/token within 0.1 % of watts over
// tokens per second, the model in the title. The hand calculation is in
// importer/mlperf_test.go: Offline 100010 J over 20 s = 5000.5 W (MLPerf
// 95010 / 19 = 5000.526 W), 5,000,000 tokens (250000 tokens/s × 20 s) in
// two requests, 0.020002 J/token; Server 80008 J / 20 s = 4000.4 W,
// 39990 tokens (1999.5 × 20), 2.000700175 J/token.
func TestImportMLPerfThenAnalyze(t *testing.T) {
	const fixture = "../../importer/testdata/mlperf/results/h200x8/llama3.1-8b/"
	for _, c := range []struct {
		scenario         string
		mlperfW, tokRate float64
		avgW, jpt        float64
	}{
		{"Offline", 95010.0 / 19, 250000, 5000.5, 0.020002},
		{"Server", 4000.4, 1999.5, 4000.4, 80008.0 / 39990},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			run := fixture + c.scenario + "/performance/run_1/"
			dir := filepath.Join(t.TempDir(), "run")
			out, errOut, code := runCLI(t, "import", "ptdaemon", run+"spl.txt", "--loadgen", run+"mlperf_log_detail.txt", "--out", dir)
			if code != exitOK || !strings.Contains(out, "worked out from the loadgen") {
				t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
			}
			out, errOut, code = runCLI(t, "analyze", dir, "--format", "json")
			if code != exitOK {
				t.Fatalf("analyze: exit %d\n%s\n%s", code, out, errOut)
			}
			var res map[string]jsonResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			avg, _ := res["avg_node_power_w"].Value.(float64)
			jpt, _ := res["node_j_per_token"].Value.(float64)
			if math.Abs(avg-c.avgW) > 1e-9 || math.Abs(avg-c.mlperfW)/c.mlperfW > 0.0005 {
				t.Errorf("avg_node_power_w %+v, want %v (within 0.05 %% of MLPerf's %v)", res["avg_node_power_w"], c.avgW, c.mlperfW)
			}
			if want := c.mlperfW / c.tokRate; math.Abs(jpt-c.jpt) > 1e-12 || math.Abs(jpt-want)/want > 0.001 {
				t.Errorf("node_j_per_token %+v, want %v (within 0.1 %% of %v W / %v tokens/s)", res["node_j_per_token"], c.jpt, c.mlperfW, c.tokRate)
			}
			out, _, code = runCLI(t, "report", dir)
			if code != exitOK || !strings.Contains(out, "llama3.1-8b") {
				t.Errorf("report: exit %d, want the model in the title\n%.600s", code, out)
			}
		})
	}
}

// A non-regular file is refused at once, exit 2 (it used to spin on
// /dev/zero for minutes).
func TestImportDevZero(t *testing.T) {
	for _, args := range [][]string{
		{"import", "ptdaemon", "/dev/zero", "--loadgen", ptdFixture + "mlperf_log_detail.txt"},
		{"import", "csv", "/dev/zero", "--map", "time=a,watts=b"},
		{"import", "prometheus", "/dev/zero"},
	} {
		args = append(args, "--out", filepath.Join(t.TempDir(), "run"))
		_, errOut, code := runCLI(t, args...)
		if code != exitInvalid || !strings.Contains(errOut, "not a regular file (a character device)") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}
