package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
)

// mlperfV41System is a real MLPerf Inference v4.1 power result kept
// gzip-compressed in the importer's testdata (NVIDIA's closed submission
// H200-SXM-141GBx8_TRT_MaxQ; source and Apache-2.0 license in
// importer/testdata/mlperf-v4.1/README.md).
const mlperfV41System = "../../importer/testdata/mlperf-v4.1/results/H200-SXM-141GBx8_TRT_MaxQ"

// unpackMLPerfRun gunzips the files of MODEL/SCENARIO/performance/RUN of
// mlperfV41System into root, keeping the results layout
// (results/SYSTEM/MODEL/SCENARIO/performance/RUN), and returns that
// directory.
func unpackMLPerfRun(t *testing.T, root, model, scenario, run string) string {
	t.Helper()
	rel := filepath.Join(model, scenario, "performance", run)
	dst := filepath.Join(root, "results", filepath.Base(mlperfV41System), rel)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spl.txt", "mlperf_log_detail.txt", "mlperf_log_summary.txt"} {
		b, err := os.ReadFile(filepath.Join(mlperfV41System, rel, name+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), plain, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// checkerAvgPower is MLPerf's average power of a run worked out as the
// submission checker does (mlcommons/inference,
// tools/submission/submission_checker.py, get_power_metric), written here
// independently of the importer: power_begin and power_end are the first
// such keys of mlperf_log_detail.txt; both they and spl.txt's times are
// read with "%m-%d-%Y %H:%M:%S.%f" and no zone (the checker's
// server_timezone and client_timezone are both 0); only lines starting
// with "Time" count, a reading counts when its time lies strictly inside
// (power_begin, power_end) and its Watts (the fourth comma-separated
// field) is > 0, and the result is the plain mean of those readings.
// window is power_end - power_begin.
func checkerAvgPower(splPath, detailPath string) (avgW float64, n int, window time.Duration, err error) {
	const layout = "01-02-2006 15:04:05.999999"
	detail, err := os.ReadFile(detailPath)
	if err != nil {
		return 0, 0, 0, err
	}
	keys := map[string]string{}
	for _, line := range strings.Split(string(detail), "\n") {
		_, js, ok := strings.Cut(line, ":::MLLOG")
		if !ok {
			continue
		}
		var kv struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		}
		if err := json.Unmarshal([]byte(js), &kv); err != nil {
			return 0, 0, 0, err
		}
		if s, ok := kv.Value.(string); ok && keys[kv.Key] == "" {
			keys[kv.Key] = s
		}
	}
	begin, err := time.Parse(layout, keys["power_begin"])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("power_begin: %w", err)
	}
	end, err := time.Parse(layout, keys["power_end"])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("power_end: %w", err)
	}
	f, err := os.Open(splPath)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	sum := 0.0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Time") {
			continue
		}
		fields := strings.Split(line, ",")
		ts, err := time.Parse(layout, fields[1])
		if err != nil {
			return 0, 0, 0, err
		}
		if !ts.After(begin) || !ts.Before(end) {
			continue
		}
		w, err := strconv.ParseFloat(fields[3], 64)
		if err != nil {
			return 0, 0, 0, err
		}
		if w > 0 {
			sum += w
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("%s: no reading inside (%v, %v)", splPath, begin, end)
	}
	return sum / float64(n), n, end.Sub(begin), nil
}

// summaryTokenRate is the result line of mlperf_log_summary.txt:
// "Tokens per second: X" (Offline) or "Completed tokens per second: X"
// (Server).
func summaryTokenRate(path, scenario string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	label := map[string]string{"Offline": "Tokens per second", "Server": "Completed tokens per second"}[scenario]
	m := regexp.MustCompile(`(?m)^` + label + `: ([0-9.]+)\s*$`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("%s: no %q line", path, label+": ")
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// Real MLPerf Inference v4.1 power results (NVIDIA closed,
// H200-SXM-141GBx8_TRT_MaxQ: llama2-70b-99 and mixtral-8x7b, Offline and
// Server), each imported from its run_1 directory exactly as import's
// help says (spl.txt and --loadgen mlperf_log_detail.txt, nothing else)
// and analyzed: exit 0; the model from the results layout and the
// scenario from the loadgen; node average power within 0.05 % of
// MLPerf's own figure (checkerAvgPower, the submission checker's method)
// and node J/token within 0.1 % of that figure over the summary's token
// rate (MLPerf's watts over tokens per second). The figures (checker's
// mean of the in-window readings; token rate from the summary):
//
//	llama2-70b-99 Offline 3116 readings 6152.984 W, 25262.1 tokens/s, 0.24357 J/token
//	llama2-70b-99 Server  2500 readings 6280.214 W, 23113.14 tokens/s, 0.27172 J/token
//	mixtral-8x7b  Offline 2592 readings 6154.804 W, 48987.9 tokens/s, 0.12564 J/token
//	mixtral-8x7b  Server  2424 readings 6174.896 W, 45496.95 tokens/s, 0.13572 J/token
func TestImportMLPerfV41ThenAnalyze(t *testing.T) {
	root := t.TempDir()
	for _, model := range []string{"llama2-70b-99", "mixtral-8x7b"} {
		for _, scenario := range []string{"Offline", "Server"} {
			t.Run(model+"/"+scenario, func(t *testing.T) {
				run := unpackMLPerfRun(t, root, model, scenario, "run_1")
				refW, n, window, err := checkerAvgPower(filepath.Join(run, "spl.txt"), filepath.Join(run, "mlperf_log_detail.txt"))
				if err != nil {
					t.Fatal(err)
				}
				rate, err := summaryTokenRate(filepath.Join(run, "mlperf_log_summary.txt"), scenario)
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(root, "runs", model+"-"+scenario)
				t.Chdir(run)
				stdout, stderr, code := runCLI(t, "import", "ptdaemon", "spl.txt", "--loadgen", "mlperf_log_detail.txt", "--out", out)
				if code != exitOK {
					t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
				}
				data, err := archive.LoadData(out)
				if err != nil {
					t.Fatal(err)
				}
				// The tokens of the window (the summary's rate × the
				// window; tens of millions) are split over synthetic
				// requests of at most 4,194,304 tokens each.
				tokens := 0
				for _, r := range data.Requests {
					if !r.Synthetic || r.OutputTokens < 1 || r.OutputTokens > 4194304 {
						t.Errorf("request %+v: want a synthetic request of 1 .. 4194304 tokens", r)
					}
					tokens += r.OutputTokens
				}
				if want := rate * window.Seconds(); math.Abs(float64(tokens)-want)/want > 0.0001 {
					t.Errorf("%d output tokens in %d requests, want %v tokens/s × %v = %.0f", tokens, len(data.Requests), rate, window, want)
				}
				if m := data.Meta; m.Engine.Model != model || m.Labels["scenario"] != scenario || m.Engine.Kind != "imported" ||
					m.Labels["mlperf_result_validity"] != "VALID" {
					t.Errorf("engine %+v, labels %v; want model %s, scenario %s, a VALID result", m.Engine, m.Labels, model, scenario)
				}
				stdout, stderr, code = runCLI(t, "analyze", out, "--format", "json")
				if code != exitOK {
					t.Fatalf("analyze: exit %d\n%s\n%s", code, stdout, stderr)
				}
				var res map[string]jsonResult
				if err := json.Unmarshal([]byte(stdout), &res); err != nil {
					t.Fatalf("%v\n%s", err, stdout)
				}
				avg, _ := res["avg_node_power_w"].Value.(float64)
				jpt, _ := res["node_j_per_token"].Value.(float64)
				wantJPT := refW / rate
				t.Logf("avg node power %.3f W, checker %.3f W (%d readings, %+.4f %%); %d tokens in %d requests; J/token %.6f, W/(tokens/s) %.6f (%+.4f %%)",
					avg, refW, n, (avg/refW-1)*100, tokens, len(data.Requests), jpt, wantJPT, (jpt/wantJPT-1)*100)
				if math.Abs(avg-refW)/refW > 0.0005 {
					t.Errorf("avg_node_power_w %+v is not within 0.05 %% of the checker's %.3f W", res["avg_node_power_w"], refW)
				}
				if math.Abs(jpt-wantJPT)/wantJPT > 0.001 {
					t.Errorf("node_j_per_token %+v is not within 0.1 %% of %.3f W / %v tokens/s = %.6f", res["node_j_per_token"], refW, rate, wantJPT)
				}
			})
		}
	}
}

// The real ranging pass of llama2-70b-99 Offline (its spl.txt's Mark is
// "2024-07-17_01-39-59_ranging", as MLPerf's power client writes it) is
// refused without --ranging, and imported marked ranging with it.
func TestImportMLPerfV41Ranging(t *testing.T) {
	root := t.TempDir()
	run := unpackMLPerfRun(t, root, "llama2-70b-99", "Offline", "ranging")
	out := filepath.Join(root, "runs", "ranging")
	t.Chdir(run)
	args := []string{"import", "ptdaemon", "spl.txt", "--loadgen", "mlperf_log_detail.txt", "--out", out}
	_, stderr, code := runCLI(t, args...)
	if code != exitInvalid || !strings.Contains(stderr, "is a ranging run") || !strings.Contains(stderr, `spl.txt:1: Mark "2024-07-17_01-39-59_ranging"`) {
		t.Fatalf("without --ranging: exit %d, want %d and the Mark named\n%s", code, exitInvalid, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused import left %s: %v", out, err)
	}
	stdout, stderr, code := runCLI(t, append(args, "--ranging")...)
	if code != exitOK || !strings.Contains(stdout, "RANGING run") {
		t.Fatalf("--ranging: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run2, err := archive.LoadData(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := run2.Meta; m.Engine.Kind != "imported-ranging" || m.Labels["mlperf_run"] != "ranging" || m.Engine.Model != "llama2-70b-99" {
		t.Errorf("engine %+v, labels %v", m.Engine, m.Labels)
	}
}
