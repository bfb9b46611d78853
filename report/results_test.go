package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/golden"
)

func passed(ok bool) *bool { return &ok }

// goldenRun is an evaluated run with one result of each kind the tables
// show: float metrics with and without a format, an integer, a value not
// applicable, a passed and a failed check, a derived list (shown with
// all=true only), a cell holding a "|" and one long enough to wrap.
func goldenRun(id string, scale float64) Run {
	vals := map[string]record.Result{
		"j_per_token":     {Kind: "metric", Value: 0.5 * scale, Unit: "J/token", Format: "%.3f"},
		"throughput_tok":  {Kind: "metric", Value: 1200.0 * scale, Unit: "tok/s"},
		"ratio":           {Kind: "metric", Value: 1.0 / 3 * scale},
		"formal_requests": {Kind: "metric", Value: int64(40 * scale), Unit: "requests"},
		"steady_j":        {Kind: "metric", Unit: "J/token", Note: "not applicable: steady state not reached"},
		"release_closed":  {Kind: "check", Value: true, Passed: passed(true), Severity: "exclude"},
		"tokens_ok":       {Kind: "check", Value: false, Passed: passed(false), Severity: "fail", Message: "a | in the message; then a reason long enough to wrap in a box table cell, which is 72 columns wide at most"},
		"formal":          {Kind: "derived", Value: []any{"r1", "r2"}},
	}
	order := []string{"formal", "j_per_token", "throughput_tok", "ratio", "formal_requests", "steady_j", "release_closed", "tokens_ok"}
	return Run{
		Meta:    record.Meta{RunID: id, Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"}, Engine: record.EngineInfo{Kind: "sim", Model: "sim-8b"}, Status: record.StatusComplete},
		Results: &record.Results{RunID: id, Excluded: true, ExcludeReason: "check tokens_ok (fail) failed", Order: order, Values: vals},
	}
}

// Results, ResultsWithBaseline in every format, against testdata/*.golden.
func TestResultsGolden(t *testing.T) {
	run, base := goldenRun("r2", 1.1), goldenRun("r1", 1)
	for _, format := range Formats {
		for _, all := range []bool{false, true} {
			suffix := format
			if all {
				suffix += ".all"
			}
			var b bytes.Buffer
			if err := Results(&b, run, format, all); err != nil {
				t.Fatalf("Results %s: %v", suffix, err)
			}
			golden.Check(t, "results."+suffix+".golden", b.Bytes())
			b.Reset()
			if err := ResultsWithBaseline(&b, run, base, format, all); err != nil {
				t.Fatalf("ResultsWithBaseline %s: %v", suffix, err)
			}
			golden.Check(t, "baseline."+suffix+".golden", b.Bytes())
		}
	}
}

// The numbers in the golden files, by hand: the run is the baseline × 1.1,
// so every number changes by +10 % (0.5 → 0.55, "%.3f" → "0.550"; 1200 →
// 1320; 1/3 → 0.366667 in 6 significant digits; 40 → int64(44)); checks
// and values not applicable have no change.
func TestResultsWithBaselineNumbers(t *testing.T) {
	run, base := goldenRun("r2", 1.1), goldenRun("r1", 1)
	var b bytes.Buffer
	if err := ResultsWithBaseline(&b, run, base, FormatJSON, false); err != nil {
		t.Fatal(err)
	}
	var got struct {
		BaselineRun string `json:"baseline_run"`
		Results     map[string]struct {
			Value     any      `json:"value"`
			Baseline  any      `json:"baseline"`
			ChangePct *float64 `json:"change_pct"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.BaselineRun != "r1" {
		t.Errorf("baseline_run = %q, want r1", got.BaselineRun)
	}
	for _, n := range []string{"j_per_token", "throughput_tok", "ratio", "formal_requests"} {
		p := got.Results[n].ChangePct
		if p == nil || *p < 9.9999 || *p > 10.0001 {
			t.Errorf("%s change_pct = %v, want +10", n, p)
		}
	}
	for _, n := range []string{"steady_j", "release_closed", "tokens_ok"} {
		if p := got.Results[n].ChangePct; p != nil {
			t.Errorf("%s change_pct = %v, want none", n, *p)
		}
	}
	if _, ok := got.Results["formal"]; ok {
		t.Error("a derived value is shown without all")
	}

	b.Reset()
	if err := ResultsWithBaseline(&b, run, base, FormatTable, false); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"baseline: run r1", "│ j_per_token │ 0.550 │ 0.500 │ +10.0 % │", "│ throughput_tok │ 1320 │ 1200 │ +10.0 % │", "│ ratio │ 0.366667 │ 0.333333 │ +10.0 % │", "│ formal_requests │ 44 │ 40 │ +10.0 % │", "EXCLUDED from formal results"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// A baseline without results shows no baseline values, and an unknown
// format is an error naming the valid ones.
func TestResultsWithBaselineEdges(t *testing.T) {
	run := goldenRun("r2", 1.1)
	var b bytes.Buffer
	if err := ResultsWithBaseline(&b, run, Run{Meta: record.Meta{RunID: "empty"}}, FormatCSV, false); err != nil {
		t.Fatal(err)
	}
	// name,kind,value,baseline,change_pct,...: 0.550 against nothing.
	if !strings.Contains(b.String(), "j_per_token,metric,0.550,,,J/token,,true") {
		t.Errorf("csv with an empty baseline:\n%s", b.String())
	}
	for _, render := range []func() error{
		func() error { return Results(&b, run, "yaml", false) },
		func() error { return ResultsWithBaseline(&b, run, run, "yaml", false) },
	} {
		if err := render(); err == nil || !strings.Contains(err.Error(), `unknown format "yaml" (valid: table, json, csv, markdown)`) {
			t.Errorf("err = %v, want unknown format", err)
		}
	}
}

// Table: a box table wraps a cell wider than maxWidth, a Markdown table
// escapes "|" and wraps too.
func TestTableGolden(t *testing.T) {
	d := &doc.Document{}
	tb := &doc.Table{Columns: doc.Cols("name", "value"), MaxWidth: 20}
	tb.Add([]string{"a|b", "1"}, []string{"long", "one two three four five six seven eight nine ten"})
	d.Add(tb)
	for _, format := range []string{FormatTable, FormatMarkdown} {
		var b bytes.Buffer
		if err := doc.Render(&b, d, format); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "table."+format+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := doc.Render(&b, d, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `a\|b`) {
		t.Errorf("markdown does not escape |:\n%s", b.String())
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		r    record.Result
		want string
	}{
		{record.Result{}, ""},
		{record.Result{Note: "not applicable: x"}, "n/a"},
		{record.Result{Value: 2.0}, "2"},
		{record.Result{Value: 0.1234567}, "0.123457"},
		{record.Result{Value: 1e20}, "1e+20"},
		{record.Result{Value: 2.0, Format: "%.2f"}, "2.00"},
		{record.Result{Value: int64(7)}, "7"},
		{record.Result{Value: uint64(8)}, "8"},
		{record.Result{Value: true}, "true"},
		{record.Result{Kind: "check", Value: true}, "pass"},
		{record.Result{Kind: "check", Value: false}, "FAIL"},
		{record.Result{Value: "text"}, "text"},
		{record.Result{Value: []any{1.0, "a"}}, `[1,"a"]`},
		{record.Result{Value: map[string]any{"k": 1.0}}, `{"k":1}`},
	}
	for _, tc := range tests {
		if got := FormatValue(tc.r); got != tc.want {
			t.Errorf("FormatValue(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestChange(t *testing.T) {
	m := func(v any) record.Result { return record.Result{Kind: "metric", Value: v} }
	tests := []struct {
		v, base record.Result
		want    string
	}{
		{m(110.0), m(100.0), "10.0 %"},        // 110/100 - 1
		{m(int64(3)), m(int64(4)), "-25.0 %"}, // 3/4 - 1
		{m(1), m(uint64(2)), "-50.0 %"},
		{m(1.0), m(0.0), ""},
		{m("x"), m(1.0), ""},
		{record.Result{Kind: "check", Value: 1.0}, m(1.0), ""},
	}
	for _, tc := range tests {
		if got := Change(tc.v, tc.base); got != tc.want {
			t.Errorf("Change(%v, %v) = %q, want %q", tc.v.Value, tc.base.Value, got, tc.want)
		}
	}
	for in, want := range map[string]string{"": "", "0.0 %": "0.0 %", "-1.0 %": "-1.0 %", "2.0 %": "+2.0 %"} {
		if got := signed(in); got != want {
			t.Errorf("signed(%q) = %q, want %q", in, got, want)
		}
	}
}
