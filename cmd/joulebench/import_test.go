package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
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
	out, errOut, code = runCLI(t, "analyze", dir, "--format", "json")
	if code != exitOK {
		t.Fatalf("analyze: exit %d\n%s\n%s", code, out, errOut)
	}
	var res map[string]jsonResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// 9999.5 J / 10 s = 999.95 W; 9999.5 J / 5000 tokens = 1.9999 J/token.
	if v, _ := res["avg_gpu_power_w"].Value.(float64); math.Abs(v-999.95) > 1e-9 {
		t.Errorf("average power %v, want 999.95", res["avg_gpu_power_w"])
	}
	if v, _ := res["window_j_per_token"].Value.(float64); math.Abs(v-1.9999) > 1e-12 {
		t.Errorf("window_j_per_token %+v, want 1.9999", res["window_j_per_token"])
	}
	for _, n := range []string{"ttft_p50_ms", "e2e_latency_p99_ms", "tpot_ms", "itl_p50_ms"} {
		if r := res[n]; r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
			t.Errorf("%s = %+v, want not applicable", n, r)
		}
	}
	for _, n := range []string{"tokens_counted", "power_valid"} {
		if r := res[n]; r.Passed == nil || !*r.Passed {
			t.Errorf("%s = %+v, want passed", n, r)
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
