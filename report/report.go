// Package report renders evaluated runs for people (tables, Markdown) and
// for programs (JSON, CSV).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// Formats a renderer accepts.
const (
	FormatTable    = doc.FormatTable
	FormatJSON     = doc.FormatJSON
	FormatCSV      = doc.FormatCSV
	FormatMarkdown = doc.FormatMarkdown
)

// Formats lists the formats every output renders in.
var Formats = doc.Names(false)

// CheckFormat rejects a format every output cannot be rendered in (an
// unknown one, or html), listing the valid ones (doc.Check).
func CheckFormat(f string) error { return doc.Check(f) }

// SimulatedNote is printed with every output of a simulated run (the
// output layer's, so that every command that builds a document says it
// alike).
const SimulatedNote = doc.SimulatedNote

// ReplayedNote is printed with a run whose power was replayed (--telemetry
// replay): real power, but recorded elsewhere, not simulated.
const ReplayedNote = "REPLAYED POWER: the power samples were recorded in another run and played back (run.json telemetry.note names the file); energy figures are not measurements of this run."

// NoteOf is the note printed with a run's output: ReplayedNote for
// replayed power, SimulatedNote for a simulated run, else "".
func NoteOf(m record.Meta) string {
	switch {
	case m.PowerReplayed():
		if m.SimulatedEngine() {
			return ReplayedNote + " The engine is joulebench's simulator."
		}
		return ReplayedNote
	case m.Simulated:
		return SimulatedNoteOf(m)
	}
	return ""
}

// SimulatedNoteOf is SimulatedNote naming the run's simulated hardware
// model, when its archive says which.
func SimulatedNoteOf(m record.Meta) string { return SimulatedNote + simHardwareSuffix(m) }

// simHardwareSuffix names the simulator's hardware model of m after its
// note ("" when the archive does not say).
func simHardwareSuffix(m record.Meta) string {
	switch hw := m.SimHardware(); hw {
	case "":
		return ""
	case "toy":
		return " Hardware model: toy (fixed step times, no hardware's figures)."
	default:
		return " Hardware model: " + hw + " (joulebench devices --sim lists its constants and sources)."
	}
}

// WorkloadNote is printed with every output of a real-engine run whose
// request set is one of the built-in sample sets (run.json
// request_set.source "builtin:NAME", the profiles' default dataset): a
// smoke set, not the method's public datasets; and of an imported MLPerf
// result the loadgen judged other than VALID (run.json
// import.validity). "" for any other run (a simulated run says
// SimulatedNote instead).
func WorkloadNote(m record.Meta) string {
	if n := ValidityNote(m); n != "" {
		return n
	}
	name, ok := strings.CutPrefix(m.RequestSet.Source, "builtin:")
	if !ok || m.Simulated {
		return ""
	}
	return fmt.Sprintf("SMOKE WORKLOAD: the request set is joulebench's built-in sample set %q, a smoke test of the setup, not one of the method's public datasets (--dataset sharegpt is the method's).", name)
}

// ValidityNote says that an imported MLPerf result is not VALID (run.json
// import.validity, the loadgen's result_validity); "" otherwise.
func ValidityNote(m record.Meta) string {
	if m.Import == nil || m.Import.Validity == "" || strings.EqualFold(m.Import.Validity, "VALID") {
		return ""
	}
	return fmt.Sprintf("MLPERF RESULT %s: the loadgen judged the imported run %s (result_validity: a constraint of its scenario was not met); its figures are not a valid MLPerf result.",
		m.Import.Validity, m.Import.Validity)
}

// WorkloadNoteName is the entry of a run's results in JSON and CSV that
// carries its WorkloadNote.
const WorkloadNoteName = "workload_note"

// Run is one evaluated run to render.
type Run struct {
	Meta    record.Meta
	Results *record.Results
}

// FormatValue renders a result's value for a table cell.
func FormatValue(r record.Result) string {
	if r.Value == nil {
		if r.Note != "" {
			return "n/a"
		}
		return ""
	}
	switch v := r.Value.(type) {
	case float64:
		if r.Format != "" {
			return fmt.Sprintf(r.Format, v)
		}
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	case int64, int, uint64:
		return fmt.Sprint(v)
	case bool:
		if r.Kind == "check" {
			if v {
				return "pass"
			}
			return "FAIL"
		}
		return strconv.FormatBool(v)
	case string:
		return v
	}
	b, err := json.Marshal(r.Value)
	if err != nil {
		return fmt.Sprint(r.Value)
	}
	return string(b)
}

// BoundaryLabel names what a figure's power covers for a heading: "GPU",
// "CPU/DRAM", "node"; "" for a value without a boundary.
func BoundaryLabel(b string) string {
	if b == "" {
		return ""
	}
	parts := strings.Split(b, "+")
	for i, p := range parts {
		switch p {
		case record.DomainGPU, record.DomainCPU, record.DomainDRAM:
			parts[i] = strings.ToUpper(p)
		}
	}
	return strings.Join(parts, "/")
}

// withBoundary reports whether any of the named results has a boundary
// (the tables then get a boundary column).
func withBoundary(names []string, values map[string]record.Result) bool {
	for _, n := range names {
		if values[n].Boundary != "" {
			return true
		}
	}
	return false
}

// measuredOnly drops from names the figures of boundaries the run did not
// measure (Unmeasured).
func measuredOnly(names []string, values map[string]record.Result, measured map[string]bool) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return Unmeasured(values[n], measured) })
}

func noteOf(r record.Result) string {
	if r.Kind == "check" {
		if r.Passed != nil && !*r.Passed {
			return fmt.Sprintf("[%s] %s", r.Severity, InWords(r.Message))
		}
		return r.Note
	}
	return r.Note
}

// selected returns the names to show: metrics and checks in profile order
// (derived values only with all=true).
func selected(res *record.Results, all bool) []string {
	var out []string
	for _, n := range res.Order {
		k := res.Values[n].Kind
		if all || k == "metric" || k == "check" {
			out = append(out, n)
		}
	}
	return out
}

// Results renders one run's results.
func Results(w io.Writer, run Run, format string, all bool) error {
	return doc.Render(w, ResultsDoc(run, all), format)
}

// ResultsDoc is one run's results: its title and notes, a table of its
// metrics and checks (derived values too with all; without all, not the
// figures of boundaries it did not measure) and whether it is excluded.
// Its data, and its JSON (an object of the results by name), hold every
// selected value.
func ResultsDoc(run Run, all bool) *doc.Document {
	res := &record.Results{} // not evaluated: no values
	if run.Results != nil {
		stored := run.Results.Stored() // as results.json holds them
		res = &stored
	}
	names := selected(res, all)
	out := make(map[string]record.Result, len(names))
	data := &doc.Table{Columns: doc.Cols("name", "kind", "value", "unit", "note", "simulated", "boundary")}
	for _, n := range names {
		r := res.Values[n]
		out[n] = r
		data.AddRow(doc.Str(n), doc.Str(r.Kind), doc.Cell{Text: FormatValue(r), Value: r.Value}, doc.Str(r.Unit), doc.Str(noteOf(r)),
			doc.Cell{Text: strconv.FormatBool(run.Meta.Simulated), Value: run.Meta.Simulated}, doc.Str(r.Boundary))
	}
	if wn := WorkloadNote(run.Meta); wn != "" {
		// A real engine on a built-in smoke set: the data and JSON say so
		// too, as an entry of kind "note" (never a metric).
		out[WorkloadNoteName] = record.Result{Kind: "note", Note: wn}
		data.AddRow(doc.Str(WorkloadNoteName), doc.Str("note"), doc.Str(""), doc.Str(""), doc.Str(wn),
			doc.Cell{Text: strconv.FormatBool(run.Meta.Simulated), Value: run.Meta.Simulated}, doc.Str(""))
	}
	d := &doc.Document{Data: data, JSON: out, Fit: true}
	if !all {
		names = measuredOnly(names, res.Values, MeasuredDomains(run.Meta))
	}
	d.Add(header(run)...)
	t := &doc.Table{Columns: doc.Cols("metric", "value", "unit", "note"), NoWrapMarkdown: true, Fit: true}
	bound := withBoundary(names, res.Values)
	if bound {
		t.Columns = doc.Cols("metric", "boundary", "value", "unit", "note")
	}
	for _, n := range names {
		r := res.Values[n]
		if bound {
			t.Add([]string{r.NameOf(n), BoundaryLabel(r.Boundary), shortValue(r), r.Unit, noteOf(r)})
		} else {
			t.Add([]string{r.NameOf(n), shortValue(r), r.Unit, noteOf(r)})
		}
	}
	d.Add(t)
	d.Add(footer(run)...)
	return d
}

// shortValueMax is the widest value a table of results shows whole.
const shortValueMax = 40

// shortValue is FormatValue for a table people read: a list or an object
// too wide for it (a derived list of requests) is shown by its size; the
// data and JSON keep the whole value.
func shortValue(r record.Result) string {
	s := FormatValue(r)
	if utf8.RuneCountInString(s) <= shortValueMax {
		return s
	}
	switch v := r.Value.(type) {
	case []any:
		return fmt.Sprintf("(%d items)", len(v))
	case map[string]any:
		return fmt.Sprintf("(%d fields)", len(v))
	case string:
		return s
	}
	if rv := reflect.ValueOf(r.Value); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return fmt.Sprintf("(%d items)", rv.Len())
	} else if rv.Kind() == reflect.Map || rv.Kind() == reflect.Struct || rv.Kind() == reflect.Pointer {
		return "(an object)"
	}
	return s
}

// header is a run's title and its notes.
func header(run Run) []doc.Block {
	m := run.Meta
	out := []doc.Block{&doc.Title{Text: fmt.Sprintf("run %s · profile %s · engine %s · model %s · status %s", m.RunID, m.Profile.Name, orDash(m.Engine.Kind), orDash(m.Engine.Model), m.Status)}}
	if note := NoteOf(m); note != "" {
		out = append(out, &doc.Note{Text: note})
	}
	if wn := WorkloadNote(m); wn != "" {
		out = append(out, &doc.Note{Text: wn})
	}
	return out
}

// footer says whether the run is excluded from formal results.
func footer(run Run) []doc.Block {
	if run.Results != nil && run.Results.Excluded {
		return []doc.Block{&doc.Alert{Label: "EXCLUDED", Text: "from formal results: " + run.Results.ExcludeReason}}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// MarkdownEscape makes a string (a label, a model name, a run id, a note)
// literal text in Markdown (doc.MarkdownEscape).
func MarkdownEscape(s string) string { return doc.MarkdownEscape(s) }

// Runs renders several archived runs: a summary of each, then their metrics
// side by side, each run's value after the first with its change against
// the first in percent (put a baseline run first to compare with it).
func Runs(w io.Writer, runs []Run, format string) error {
	return doc.Render(w, RunsDoc(runs), format)
}

// runItem is one run in the JSON of several runs.
type runItem struct {
	Dir      string                   `json:"run_id"`
	Profile  string                   `json:"profile"`
	Engine   string                   `json:"engine"`
	Model    string                   `json:"model"`
	Status   string                   `json:"status"`
	Sim      bool                     `json:"simulated"`
	Excluded bool                     `json:"excluded"`
	Values   map[string]record.Result `json:"results"`
}

// RunsDoc is several runs (Runs): its JSON an array of the runs, each with
// its metrics and checks by name; its data one line per run and value.
func RunsDoc(runs []Run) *doc.Document {
	items := make([]runItem, 0, len(runs))
	data := &doc.Table{Columns: doc.Cols("run_id", "profile", "engine", "model", "status", "simulated", "excluded", "name", "value", "unit", "note", "boundary")}
	for _, r := range runs {
		it := runItem{Dir: r.Meta.RunID, Profile: r.Meta.Profile.Name, Engine: r.Meta.Engine.Kind, Model: r.Meta.Engine.Model, Status: r.Meta.Status, Sim: r.Meta.Simulated}
		if r.Results != nil {
			it.Excluded = r.Results.Excluded
			it.Values = map[string]record.Result{}
			for _, n := range selected(r.Results, false) {
				v := r.Results.Values[n]
				it.Values[n] = v
				data.Add([]string{r.Meta.RunID, r.Meta.Profile.Name, r.Meta.Engine.Kind, r.Meta.Engine.Model, r.Meta.Status,
					strconv.FormatBool(r.Meta.Simulated), strconv.FormatBool(r.Results.Excluded), n, FormatValue(v), v.Unit, noteOf(v), v.Boundary})
			}
		}
		items = append(items, it)
	}
	d := &doc.Document{Data: data, JSON: items}
	t := &doc.Table{Columns: doc.Cols("run", "profile", "engine", "model", "status", "simulated", "excluded"), NoWrapMarkdown: true}
	anySim := false
	for _, r := range runs {
		excluded := "no"
		if r.Results != nil && r.Results.Excluded {
			excluded = "yes: " + r.Results.ExcludeReason
		}
		sim := "no"
		if r.Meta.Simulated {
			sim, anySim = "SIMULATED", true
		}
		t.Add([]string{r.Meta.RunID, r.Meta.Profile.Name, orDash(r.Meta.Engine.Kind), orDash(r.Meta.Engine.Model), r.Meta.Status, sim, excluded})
	}
	if anySim {
		d.Add(&doc.Note{Text: SimulatedNote})
	}
	for _, r := range runs {
		if n := ValidityNote(r.Meta); n != "" {
			d.Add(&doc.Note{Text: "run " + r.Meta.RunID + ": " + n})
		}
	}
	d.Add(t, &doc.Blank{}, metricsSideBySide(runs))
	return d
}

// metricsSideBySide is the metrics of several runs: one row per metric
// name (first-seen order) with its boundary when any has one, one column
// per run, each value after the first with its change against the first.
func metricsSideBySide(runs []Run) *doc.Table {
	var names []string
	units := map[string]string{}
	bounds := map[string]string{}
	labels := map[string]string{}
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Results == nil {
			continue
		}
		for _, n := range selected(r.Results, false) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
				units[n] = r.Results.Values[n].Unit
				bounds[n] = BoundaryLabel(r.Results.Values[n].Boundary)
				labels[n] = r.Results.Values[n].NameOf(n)
			}
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		for _, r := range runs {
			if r.Results == nil || !Unmeasured(r.Results.Values[n], MeasuredDomains(r.Meta)) {
				return false
			}
		}
		return true // no run measured its boundary
	})
	head := []string{"metric", "unit"}
	bound := false
	for _, n := range names {
		bound = bound || bounds[n] != ""
	}
	if bound {
		head = []string{"metric", "boundary", "unit"}
	}
	for _, r := range runs {
		head = append(head, r.Meta.RunID)
	}
	invalid := make([]map[string][]string, len(runs))
	for i, r := range runs {
		invalid[i] = InvalidatedBy(r.Results)
	}
	mrows := make([][]doc.Cell, 0, len(names))
	for _, n := range names {
		row := []string{labels[n], units[n]}
		if bound {
			row = []string{labels[n], bounds[n], units[n]}
		}
		for i, r := range runs {
			cell := ""
			if r.Results != nil {
				if v, ok := r.Results.Values[n]; ok {
					cell = FormatValue(v)
					if i > 0 && runs[0].Results != nil {
						if c := Change(v, runs[0].Results.Values[n]); c != "" {
							cell += " (" + signed(c) + ")"
						}
					}
					if by := invalid[i][n]; len(by) > 0 && v.Value != nil {
						cell += " (" + InvalidNote(by) + ")"
					}
				}
			}
			row = append(row, cell)
		}
		mrows = append(mrows, doc.Row(row...))
	}
	return &doc.Table{Columns: doc.Cols(head...), Rows: mrows, NoWrapMarkdown: true}
}
