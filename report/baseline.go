package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
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
	x, ok1 := number(v.Value)
	b, ok2 := number(base.Value)
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

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// ResultsWithBaseline renders one run's results with each metric beside
// its value on a baseline run and the change in percent; the checks that
// compare with the baseline show why they failed.
func ResultsWithBaseline(w io.Writer, run, base Run, format string, all bool) error {
	res := run.Results
	names := selected(res, all)
	baseOf := func(n string) record.Result {
		if base.Results == nil {
			return record.Result{}
		}
		return base.Results.Values[n]
	}
	switch format {
	case FormatJSON:
		type item struct {
			record.Result
			Baseline  any      `json:"baseline,omitempty"`
			ChangePct *float64 `json:"change_pct,omitempty"`
		}
		out := map[string]any{"baseline_run": base.Meta.RunID}
		vals := make(map[string]item, len(names))
		for _, n := range names {
			it := item{Result: res.Values[n], Baseline: baseOf(n).Value}
			if p, ok := changePct(res.Values[n], baseOf(n)); ok {
				it.ChangePct = &p
			}
			vals[n] = it
		}
		out["results"] = vals
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"name", "kind", "value", "baseline", "change_pct", "unit", "note", "simulated"})
		for _, n := range names {
			r := res.Values[n]
			pct := ""
			if p, ok := changePct(r, baseOf(n)); ok {
				pct = strconv.FormatFloat(p, 'f', 2, 64)
			}
			_ = cw.Write([]string{n, r.Kind, FormatValue(r), FormatValue(baseOf(n)), pct, r.Unit, noteOf(r), strconv.FormatBool(run.Meta.Simulated)})
		}
		cw.Flush()
		return cw.Error()
	case FormatTable, FormatMarkdown:
		header(w, run, format)
		if format == FormatMarkdown {
			fmt.Fprintf(w, "baseline: run %s\n\n", MarkdownEscape(base.Meta.RunID))
		} else {
			fmt.Fprintf(w, "baseline: run %s\n", base.Meta.RunID)
		}
		rows := make([][]string, 0, len(names))
		for _, n := range names {
			r := res.Values[n]
			b := ""
			if r.Kind != "check" {
				b = FormatValue(baseOf(n))
			}
			rows = append(rows, []string{n, FormatValue(r), b, signed(Change(r, baseOf(n))), r.Unit, noteOf(r)})
		}
		if err := renderTable(w, format, []string{"metric", "value", "baseline", "change", "unit", "note"}, rows, 60, false); err != nil {
			return err
		}
		footer(w, run, format)
		return nil
	}
	return CheckFormat(format)
}
