package htmlreport

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// A headline card of a figure that a failed check invalidates says so
// ("invalid: check … failed"), as the summary does; a card no check
// invalidates has no such mark; the baseline_idle reason is in words on
// the page, not the JSON its detail is built with.
func TestRunPageKeepsInvalidMark(t *testing.T) {
	run := synthRun(t, filepath.Join(t.TempDir(), "run"), "inv", "m")
	in := evaluate(t, run)
	f := false
	in.Results.Values["first_token_times_exact"] = record.Result{Kind: "check", Value: false, Passed: &f, Severity: "warn",
		Invalidates: []string{"ttft_p50_ms"}, Message: "first-token times are upper bounds: 3 of 301"}
	in.Results.Values["baseline_idle"] = record.Result{Kind: "check", Value: false, Passed: &f, Severity: "warn",
		Invalidates: []string{"full_lifecycle_j_per_token"},
		Message:     "the idle baseline was not idle: power CV {\n  \"gpu0\": 0.081,\n  \"gpu1\": 0.012\n}, memory MiB {\n  \"gpu0\": 2048\n}"}
	var buf bytes.Buffer
	if err := WriteRun(&buf, []RunInput{in}, Options{Version: "test", Now: time.Unix(base, 0)}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	card := func(name string) string {
		m := regexp.MustCompile(`<div class="card[^"]*" data-metric="` + name + `"[^>]*>.*?</div></div>(<div class="n">[^<]*</div>)?`).FindString(page)
		if m == "" {
			t.Fatalf("no headline card of %s", name)
		}
		return m
	}
	if c := card("ttft_p50_ms"); !strings.Contains(c, "invalid: check first_token_times_exact failed") {
		t.Errorf("the TTFT card does not say it is invalid: %s", c)
	}
	if c := card("full_lifecycle_j_per_token"); !strings.Contains(c, "invalid: check baseline_idle failed") {
		t.Errorf("the full-lifecycle card does not say it is invalid: %s", c)
	}
	if c := card("output_throughput_tok_s"); strings.Contains(c, "invalid") {
		t.Errorf("the throughput card says invalid: %s", c)
	}
	if !strings.Contains(page, "power CV gpu0 0.081 and gpu1 0.012, memory MiB gpu0 2048") || strings.Contains(page, "&#34;gpu0&#34;") {
		t.Error("the baseline_idle reason is not in words on the page")
	}
}
