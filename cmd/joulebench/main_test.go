package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := newApp(&out, &errOut).execute(context.Background(), args)
	code := 0
	if err != nil {
		code = exitCode(err)
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// The small archive in testdata/run-small: one device at a constant 100 W
// (the counter reads 100 J per second), stages baseline [0,5], startup
// [5,10], formal [10,20], release [20,30], engine exit at t=21, four formal
// requests with 50+50+100+100 = 300 output tokens.
const smallRun = "testdata/run-small"

// Editing a copy of benchmark-1.5 to add a metric and a threshold, then
// analyze on an archived run shows the new metric and the check result.
func TestAnalyzeWithEditedProfile(t *testing.T) {
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "parameters:\n", "parameters:\n  max_energy_per_request_j: {type: float, default: 200}\n", 1)
	edited = strings.Replace(edited, "metrics:\n", `metrics:
  - {name: energy_per_request_j, unit: J/request, expr: e_formal / len(formal), format: "%.2f"}
`, 1)
	edited = strings.Replace(edited, "checks:\n", `checks:
  - name: energy_per_request_ok
    expr: energy_per_request_j <= max_energy_per_request_j
    severity: fail
    message: energy per request above the threshold
`, 1)
	file := filepath.Join(t.TempDir(), "my-benchmark.yaml")
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}

	// release_hold=5s: power is in band from t=20 on and the data reaches
	// t=30, so release closes at the engine exit (t=21).
	out, errOut, code := runCLI(t, "analyze", smallRun, "--profile", file, "--set", "release_hold=5s", "--format", "json")
	if code != exitChecks {
		t.Fatalf("exit code %d, want %d (check failed)\n%s\n%s", code, exitChecks, out, errOut)
	}
	var res map[string]struct {
		Value    any    `json:"value"`
		Unit     string `json:"unit"`
		Passed   *bool  `json:"passed"`
		Severity string `json:"severity"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	// formal energy 100 W × 10 s = 1000 J over 4 requests = 250 J/request.
	if v := res["energy_per_request_j"]; v.Value != 250.0 || v.Unit != "J/request" {
		t.Errorf("energy_per_request_j = %+v, want 250 J/request", v)
	}
	if c := res["energy_per_request_ok"]; c.Passed == nil || *c.Passed || c.Severity != "fail" {
		t.Errorf("energy_per_request_ok = %+v, want failed (250 > 200)", c)
	}
	// release: 20 → 21 at 100 W = 100 J; startup 5 s × 100 W = 500 J;
	// full lifecycle (500 + 1000 + 100) / 300 tokens = 5.3333 J/token.
	if v := res["release_energy_j"].Value; v != 100.0 {
		t.Errorf("release_energy_j = %v, want 100", v)
	}
	if v := res["full_lifecycle_j_per_token"].Value.(float64); v < 5.33333 || v > 5.33334 {
		t.Errorf("full_lifecycle_j_per_token = %v, want 1600/300 = 5.3333", v)
	}
	if c := res["release_closed"]; c.Passed == nil || !*c.Passed {
		t.Errorf("release_closed = %+v, want passed", c)
	}

	// Loosen the threshold: the same archive passes.
	out, errOut, code = runCLI(t, "analyze", smallRun, "--profile", file, "--set", "release_hold=5s", "--set", "max_energy_per_request_j=300", "--all")
	if code != exitOK {
		t.Fatalf("exit code %d, want 0\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"energy_per_request_j", "250.00", "energy_per_request_ok", "pass", "SIMULATED"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
}

func TestAnalyzeDefaultHoldExcludes(t *testing.T) {
	// With the default 30 s hold the 10 s of release data cannot close it:
	// release_closed (severity exclude) fails → exit 3, marked EXCLUDED.
	out, _, code := runCLI(t, "analyze", smallRun, "--profile", "benchmark-1.5")
	if code != exitChecks || !strings.Contains(out, "EXCLUDED") {
		t.Fatalf("code %d, want %d and EXCLUDED in:\n%s", code, exitChecks, out)
	}
	// release energy then runs to the end of the release stage: 10 s × 100 W.
	if !strings.Contains(out, "1000.0") {
		t.Errorf("release energy 1000.0 missing:\n%s", out)
	}
}

func TestExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nsteps: [{kind: nope}]\nmetrics: [{name: m, expr: '1'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"validate", bad}, exitInvalid, `bad.yaml:2:16: steps[0] (nope): unknown step kind "nope"`},
		{[]string{"validate", "benchmark-1.5"}, exitOK, "is valid"},
		{[]string{"validate", "no-such-profile"}, exitInvalid, "no built-in profile"},
		{[]string{"validate", "benchmark-1.5", "--set", "steady_span_start=first_token"}, exitInvalid,
			`parameter steady_span_start: span start "first_token" is not first_completion or earliest_first_token`},
		{[]string{"analyze", smallRun, "--profile", "benchmark-1.0", "--set", "steady_span_start=first_token"}, exitEval,
			`steady_state: span start "first_token" is not first_completion or earliest_first_token`},
		{[]string{"analyze", "testdata/does-not-exist"}, exitInvalid, "run.json"},
		{[]string{"analyze", smallRun, "--format", "yaml"}, exitInvalid, "unknown format"},
		{[]string{"analyze", smallRun, "--profile", "benchmark-1.5", "--set", "window"}, exitInvalid, "expected key=value"},
		{[]string{"analyze", smallRun, "--profile", "benchmark-1.5", "--set", "windw=3"}, exitInvalid, `unknown parameter "windw"`},
		{[]string{"nonsense"}, exitInvalid, "unknown command"},
		{[]string{"profiles", "list"}, exitOK, "benchmark-1.5"},
		{[]string{"profiles", "show", "asiai"}, exitOK, "tok_per_sec_per_watt"},
		{[]string{"profiles", "builtins"}, exitOK, "steady_state("},
		{[]string{"version"}, exitOK, "archive format v1"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.msg) {
			t.Errorf("%v: code %d (want %d), output lacks %q:\n%s%s", c.args, code, c.code, c.msg, out, errOut)
		}
	}
}

func TestAnalyzeEvalErrorExitCode(t *testing.T) {
	// A formula that divides by zero on this run's data (no warmup requests
	// → 0 tokens) is an evaluation error naming the metric.
	file := filepath.Join(t.TempDir(), "p.yaml")
	prof := "name: p\nsteps: [{kind: archive}]\nderive:\n  warm: filter(requests, .phase == \"warmup\")\nmetrics:\n  - {name: j_per_warm_token, expr: 'energy(0, 10, \"trapz\") / sum(warm, .output_tokens)'}\n"
	if err := os.WriteFile(file, []byte(prof), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "analyze", smallRun, "--profile", file)
	if code != exitEval || !strings.Contains(errOut, "metric j_per_warm_token") || !strings.Contains(errOut, "+Inf") {
		t.Errorf("code %d, want %d naming the metric and +Inf:\n%s", code, exitEval, errOut)
	}
}

func TestReportFormats(t *testing.T) {
	for _, f := range []string{"table", "markdown", "csv", "json"} {
		out, errOut, code := runCLI(t, "report", smallRun, smallRun, "--format", f, "--profile", "benchmark-1.0")
		// table and markdown show the metric's label, csv and json its name
		if code != 0 || !strings.Contains(out, map[bool]string{true: "Output throughput", false: "output_throughput_tok_s"}[f == "table" || f == "markdown"]) {
			t.Errorf("report --format %s: code %d\n%s%s", f, code, out, errOut)
		}
		if (f == "table" || f == "markdown") && !strings.Contains(out, "SIMULATED") {
			t.Errorf("report --format %s does not say simulated:\n%s", f, out)
		}
	}
}

// The standard log package's output (net/http's own messages, which can
// quote a server's bytes: a request echoed with its token) goes through
// the redactor: setup hands stdLog the redacted stderr (main hands it to
// log.SetOutput; here a function keeps it, no global is changed).
func TestStdLogRedacted(t *testing.T) {
	const token = "hf_s3cretTOKENvalue"
	t.Setenv("HF_TOKEN", token)
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	var logW io.Writer
	a.stdLog = func(w io.Writer) { logW = w }
	if err := a.execute(context.Background(), []string{"profiles", "list"}); err != nil {
		t.Fatal(err)
	}
	if logW == nil {
		t.Fatal("setup did not route the log package's output")
	}
	l := log.New(logW, "", 0)
	l.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=<nil>", "HEAD /x Bearer "+token)
	if s := errOut.String(); strings.Contains(s, token) || !strings.Contains(s, "Unsolicited response") || !strings.Contains(s, "[redacted]") {
		t.Errorf("stderr:\n%s", s)
	}
}
