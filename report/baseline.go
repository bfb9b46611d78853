package report

import (
	"io"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"

	"github.com/joulebench/joulebench/internal/num"
)

// Change is the relative change of v against base in percent, as a table
// cell: "+10.0 %", "-3.2 %"; "" when either is not a number or base is 0.
func Change(v, base record.Result) string {
	pct, ok := changePct(v, base)
	if !ok {
		return ""
	}
	return strconv.FormatFloat(pct, 'f', 1, 64) + " %"
}

func changePct(v, base record.Result) (float64, bool) {
	x, ok1 := num.Float(v.Value)
	b, ok2 := num.Float(base.Value)
	if !ok1 || !ok2 || b == 0 || v.Kind == "check" {
		return 0, false
	}
	return (x/b - 1) * 100, true
}

func signed(s string) string {
	if s != "" && s[0] != '-' && s != "0.0 %" {
		return "+" + s
	}
	return s
}

// ResultsWithBaseline renders one run's results with each metric beside
// its value on a baseline run and the change in percent; the checks that
// compare with the baseline show why they failed.
func ResultsWithBaseline(w io.Writer, run, base Run, format string, all bool) error {
	return doc.Render(w, ResultsWithBaselineDoc(run, base, all), format)
}

// ResultsWithBaselineDoc is ResultsWithBaseline's document: its JSON the
// baseline's run id and the results by name, each with the baseline's
// value and the change in percent.
func ResultsWithBaselineDoc(run, base Run, all bool) *doc.Document {
	res := run.Results
	names := selected(res, all)
	baseOf := func(n string) record.Result {
		if base.Results == nil {
			return record.Result{}
		}
		return base.Results.Values[n]
	}
	type item struct {
		record.Result
		Baseline  any      `json:"baseline,omitempty"`
		ChangePct *float64 `json:"change_pct,omitempty"`
	}
	vals := make(map[string]item, len(names))
	data := &doc.Table{Columns: doc.Cols("name", "kind", "value", "baseline", "change_pct", "unit", "note", "simulated")}
	t := &doc.Table{Columns: doc.Cols("metric", "value", "baseline", "change", "unit", "note"), MaxWidth: 60, NoWrapMarkdown: true}
	for _, n := range names {
		r := res.Values[n]
		it := item{Result: r, Baseline: baseOf(n).Value}
		pct := ""
		if p, ok := changePct(r, baseOf(n)); ok {
			it.ChangePct = &p
			pct = strconv.FormatFloat(p, 'f', 2, 64)
		}
		vals[n] = it
		data.Add([]string{n, r.Kind, FormatValue(r), FormatValue(baseOf(n)), pct, r.Unit, noteOf(r), strconv.FormatBool(run.Meta.Simulated)})
		b := ""
		if r.Kind != "check" {
			b = FormatValue(baseOf(n))
		}
		t.Add([]string{n, FormatValue(r), b, signed(Change(r, baseOf(n))), r.Unit, noteOf(r)})
	}
	d := &doc.Document{Data: data, JSON: map[string]any{"baseline_run": base.Meta.RunID, "results": vals}}
	d.Add(header(run)...)
	d.Add(&doc.Text{Text: "baseline: run " + base.Meta.RunID, Para: true}, t)
	d.Add(footer(run)...)
	return d
}
