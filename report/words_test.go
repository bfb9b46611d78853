package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// baselineIdleMessage is a failed baseline_idle check's message as
// benchmark-1.5 writes it: its detail is expr's toJSON of two maps,
// indented over several lines.
const baselineIdleMessage = "the idle baseline was not idle: power CV {\n  \"gpu0\": 0.081,\n  \"gpu1\": 0.012\n}, memory MiB {\n  \"gpu0\": 2048,\n  \"gpu1\": 0\n}"

// A JSON object or array inside a check's message is written in words:
// by hand, {"gpu0": 0.081, "gpu1": 0.012} reads "gpu0 0.081 and gpu1
// 0.012"; three entries "a, b and c"; an empty object "none"; a brace
// that is no JSON stays as it is.
func TestInWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{baselineIdleMessage, "the idle baseline was not idle: power CV gpu0 0.081 and gpu1 0.012, memory MiB gpu0 2048 and gpu1 0"},
		{`cv {"a": 1, "b": 2, "c": 3}`, "cv a 1, b 2 and c 3"},
		{`cv {}`, "cv none"},
		{`list [1, 2]`, "list 1 and 2"},
		{`nested {"h": {"g": 1}}`, "nested h (g 1)"},
		{`a {not json} b`, "a {not json} b"},
		{"plain text", "plain text"},
	} {
		if got := InWords(c.in); got != c.want {
			t.Errorf("InWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// baselineIdleRun is a run whose baseline_idle check failed (a warn
// check that invalidates the full-lifecycle J/token) and whose
// first_token_times_exact check failed (a warn check that invalidates
// ttft_p99_ms).
func baselineIdleRun(id string) Run {
	vals := map[string]record.Result{
		"full_lifecycle_j_per_token": {Kind: "metric", Value: 0.5, Unit: "J/token", Format: "%.3f"},
		"ttft_p99_ms":                {Kind: "metric", Value: 120.0, Unit: "ms", Format: "%.1f"},
		"output_throughput_tok_s":    {Kind: "metric", Value: 900.0, Unit: "tok/s", Format: "%.1f"},
		"baseline_idle": {Kind: "check", Value: false, Passed: passed(false), Severity: "warn",
			Invalidates: []string{"full_lifecycle_j_per_token"}, Message: baselineIdleMessage},
		"first_token_times_exact": {Kind: "check", Value: false, Passed: passed(false), Severity: "warn",
			Invalidates: []string{"ttft_p99_ms"}, Message: "first-token times are upper bounds: 3 of 40"},
	}
	order := []string{"full_lifecycle_j_per_token", "ttft_p99_ms", "output_throughput_tok_s", "baseline_idle", "first_token_times_exact"}
	return Run{
		Meta:    record.Meta{RunID: id, Profile: record.ProfileRef{Name: "benchmark-1.5"}, Engine: record.EngineInfo{Kind: "sim", Model: "m"}, Status: record.StatusComplete},
		Results: &record.Results{RunID: id, Order: order, Values: vals},
	}
}

// The runs side by side (joulebench report) keep the mark of a figure a
// failed check invalidates, as the summary does; the throughput, which no
// check invalidates, has none; the baseline_idle reason is in words, on
// one line, in every table that shows it.
func TestRunsKeepInvalidMark(t *testing.T) {
	var b bytes.Buffer
	if err := Runs(&b, []Run{baselineIdleRun("r1"), baselineIdleRun("r2")}, FormatTable); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, line := range strings.Split(got, "\n") {
		switch {
		case strings.Contains(line, "TTFT") || strings.Contains(line, "ttft_p99_ms"):
			if strings.Count(line, "(invalid: check first_token_times_exact failed)") != 2 {
				t.Errorf("the TTFT line does not mark both runs' value invalid:\n%s", line)
			}
		case strings.Contains(line, "full_lifecycle_j_per_token"):
			if strings.Count(line, "(invalid: check baseline_idle failed)") != 2 {
				t.Errorf("the full-lifecycle line does not mark both runs' value invalid:\n%s", line)
			}
		case strings.Contains(line, "output_throughput_tok_s"):
			if strings.Contains(line, "invalid") {
				t.Errorf("the throughput is marked invalid:\n%s", line)
			}
		}
	}
	if !strings.Contains(got, "(invalid: check first_token_times_exact failed)") {
		t.Errorf("no invalid mark in:\n%s", got)
	}
	b.Reset()
	if err := Results(&b, baselineIdleRun("r1"), FormatMarkdown, false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "power CV gpu0 0.081 and gpu1 0.012") || strings.Contains(got, `"gpu0"`) {
		t.Errorf("the baseline_idle reason is not in words:\n%s", got)
	}
	b.Reset()
	if err := Summary(&b, baselineIdleRun("r1"), SummarySpec{Metrics: []string{"ttft_p99_ms"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(got, "power CV gpu0 0.081 and gpu1 0.012, memory MiB gpu0 2048 and gpu1 0") || strings.Contains(got, "{") {
		t.Errorf("the summary's baseline_idle reason is not in words:\n%s", got)
	}
}
