package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func boolp(b bool) *bool { return &b }

// The summary shows the headline metrics (rounded to their formats), a
// count of the checks, each failed one with its reason, and a warn check
// expected on a shared machine in one line without FAIL; every line fits
// 100 columns.
func TestSummary(t *testing.T) {
	long := strings.Repeat("a long reason ", 12)
	res := &record.Results{
		Order: []string{"j", "tps", "steady", "hidden", "c_pass", "c_na", "c_warn", "c_expected", "c_fail"},
		Values: map[string]record.Result{
			"j":      {Kind: "metric", Value: 0.268345678, Unit: "J/token", Format: "%.4f"},
			"tps":    {Kind: "metric", Value: 1981.2999, Unit: "tok/s", Format: "%.1f"},
			"steady": {Kind: "metric", Unit: "J/token", Note: "not applicable: steady state not reached"},
			"hidden": {Kind: "metric", Value: 1.0, Unit: "x"},
			"c_pass": {Kind: "check", Value: true, Passed: boolp(true), Severity: "warn"},
			"c_na":   {Kind: "check", Severity: "warn", Note: "not applicable"},
			"c_warn": {Kind: "check", Value: false, Passed: boolp(false), Severity: "warn", Message: "idle was not idle: power CV 0.2"},
			"c_expected": {Kind: "check", Value: false, Passed: boolp(false), Severity: "warn",
				Message: "first-token times are upper bounds: 14 of 600, widest bound 25.6 ms"},
			"c_fail": {Kind: "check", Value: false, Passed: boolp(false), Severity: "exclude", Message: "release did not close: " + long},
		},
		Excluded: true, ExcludeReason: "check c_fail failed: release did not close: " + long,
	}
	spec := SummarySpec{
		Metrics: []string{"j", "tps", "steady"},
		Checks: map[string]CheckNote{
			"c_warn":     {Message: "idle was not idle"},
			"c_expected": {Message: "first-token times are upper bounds", Expected: "expected on a shared machine: CPU contention"},
			"c_fail":     {Message: "release did not close"},
		},
		Hint: "every value: --all",
	}
	var buf bytes.Buffer
	run := Run{Meta: record.Meta{RunID: "r1", Status: "complete", Simulated: true}, Results: res}
	if err := Summary(&buf, run, spec); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"  j            0.2683 J/token\n", // %.4f of 0.268345678
		"  tps          1981.3 tok/s\n",   // %.1f of 1981.2999
		"  steady          n/a J/token (steady state not reached)\n",
		"checks: 1 passed, 1 not applicable, 3 failed:\n",
		"  warn c_warn: idle was not idle\n    power CV 0.2\n",
		"  warn c_expected: 14 of 600, widest bound 25.6 ms (expected on a shared machine: CPU contention)\n",
		"  FAIL c_fail [exclude]: release did not close\n",
		"EXCLUDED from formal results: check c_fail failed\n",
		"every value: --all\n",
		"SIMULATED",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hidden") || strings.Contains(got, "FAIL c_expected") {
		t.Errorf("summary shows a metric not marked, or FAIL for an expected warning:\n%s", got)
	}
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if n := len([]rune(l)); n > SummaryWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	// No headline metric: the whole table, as before.
	buf.Reset()
	if err := Summary(&buf, run, SummarySpec{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "hidden") {
		t.Errorf("without summary marks the full table is shown:\n%s", buf.String())
	}
}

// A failed check marks the headline figures it declares invalid and no
// other: a first-token check leaves the J/token as it is.
func TestSummaryMarksInvalidated(t *testing.T) {
	res := &record.Results{
		Order: []string{"j", "ttft", "c_first"},
		Values: map[string]record.Result{
			"j":    {Kind: "metric", Value: 0.25, Unit: "J/token", Format: "%.2f"},
			"ttft": {Kind: "metric", Value: 12.0, Unit: "ms", Format: "%.1f"},
			"c_first": {Kind: "check", Value: false, Passed: boolp(false), Severity: "warn",
				Message: "first-token times are upper bounds", Invalidates: []string{"ttft"}},
		},
	}
	var buf bytes.Buffer
	run := Run{Meta: record.Meta{RunID: "r1", Status: "complete"}, Results: res}
	if err := Summary(&buf, run, SummarySpec{Metrics: []string{"j", "ttft"}}); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	if !strings.Contains(got, "  ttft         12.0 ms (invalid: check c_first failed)\n") || !strings.Contains(got, "  j            0.25 J/token\n") {
		t.Errorf("summary:\n%s", got)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"  one two three four", 10, "  one two|  three|  four"},
		{"averyveryverylongword x", 10, "averyveryverylongword|  x"},
	} {
		if got := strings.Join(wrap(tc.s, tc.width, "  "), "|"); got != tc.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}

// A metric marked `summary: applicable` is shown only with a value; a
// metric with a boundary carries it after its unit, and the header names
// the boundaries of the figures shown with a value.
func TestSummaryApplicableAndBoundary(t *testing.T) {
	res := &record.Results{
		Order: []string{"gpu_j", "cpu_j", "node_j"},
		Values: map[string]record.Result{
			"gpu_j":  {Kind: "metric", Value: 0.25, Unit: "J/token", Format: "%.2f", Boundary: "gpu"},
			"cpu_j":  {Kind: "metric", Value: 0.05, Unit: "J/token", Format: "%.2f", Boundary: "cpu+dram"},
			"node_j": {Kind: "metric", Unit: "J/token", Boundary: "node", Note: "not applicable: no node power in this run"},
		},
	}
	spec := SummarySpec{Metrics: []string{"gpu_j", "cpu_j", "node_j"}, WhenApplicable: []string{"cpu_j", "node_j"}}
	var buf bytes.Buffer
	if err := Summary(&buf, Run{Meta: record.Meta{RunID: "r2", Status: "complete"}, Results: res}, spec); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"energy boundary GPU, CPU/DRAM\n",
		"  gpu_j         0.25 J/token [GPU]\n", // name padded to 6, value to 12
		"  cpu_j         0.05 J/token [CPU/DRAM]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "node_j") {
		t.Errorf("node_j has no value and is summary: applicable, yet shown:\n%s", got)
	}
}

// A run not evaluated (no results) shows its title, an empty table and
// the hint, never a panic.
func TestSummaryNotEvaluated(t *testing.T) {
	var b strings.Builder
	run := Run{Meta: record.Meta{RunID: "r", Status: record.StatusComplete, Profile: record.ProfileRef{Name: "p"}}}
	if err := Summary(&b, run, SummarySpec{Metrics: []string{"m"}, Hint: "see --all"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "run r · profile p · engine - · model - · status complete\n") || !strings.HasSuffix(out, "\nsee --all\n") {
		t.Errorf("summary:\n%s", out)
	}
}

// In the table people read, a list or object too wide for it is shown by
// its size (the data and JSON keep it whole); short values stay whole.
func TestShortValue(t *testing.T) {
	long := make([]any, 7)
	for i := range long {
		long[i] = map[string]any{"id": "request-number-" + strings.Repeat("x", 10)}
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{long, "(7 items)"},
		{map[string]any{"a": strings.Repeat("y", 50), "b": 1.0}, "(2 fields)"},
		{[]any{1.0, 2.0}, "[1,2]"},
		{0.25, "0.25"},
	} {
		if got := shortValue(record.Result{Kind: "derived", Value: c.v}); got != c.want {
			t.Errorf("%v: %q, want %q", c.v, got, c.want)
		}
	}
}
