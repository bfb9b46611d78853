package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// simulatedShort is SimulatedNote in one summary line.
const simulatedShort = "SIMULATED: joulebench's simulated engine and GPU, not a measurement of real hardware."

// SummaryWidth is the widest line of the summary.
const SummaryWidth = 100

// SummarySpec says what the summary of a run shows: the method's headline
// metrics (the profile's `summary: true` ones, in profile order) and, for
// a check whose failure is expected somewhere (the profile's `expected:`),
// where, so that it reads as a note rather than as a FAIL.
type SummarySpec struct {
	Metrics []string
	// WhenApplicable names the metrics of Metrics shown only when they
	// have a value (the profile's `summary: applicable`).
	WhenApplicable []string
	// Checks holds, by check name, the profile's message (a failed check's
	// result message is it, then ": " and the detail) and where a failure
	// is expected.
	Checks map[string]CheckNote
	// Notes are lines before Hint (e.g. where the parameters came from).
	Notes []string
	// Hint is the last line (e.g. how to see every value); empty: none.
	Hint string
}

// Summary renders a run's headline figures, one per line, then its checks:
// a count of those passed and not applicable, and each failed one with its
// reason. Every line fits SummaryWidth columns. With no headline metric in
// spec, it renders the full table (Results with FormatTable).
func Summary(w io.Writer, run Run, spec SummarySpec) error {
	return doc.Render(w, SummaryDoc(run, spec), FormatTable)
}

// SummaryDoc is Summary's document, a line of text each; with no headline
// metric in spec, the results' (ResultsDoc) and spec's notes and hint.
// Its data and JSON are the results'.
func SummaryDoc(run Run, spec SummarySpec) *doc.Document {
	res := run.Results
	d := ResultsDoc(run, false)
	if res == nil || len(spec.Metrics) == 0 {
		for _, n := range spec.Notes {
			d.Add(&doc.Text{Text: n})
		}
		if spec.Hint != "" {
			d.Add(&doc.Text{Text: spec.Hint})
		}
		return d
	}
	var shown []string
	measured := MeasuredDomains(run.Meta)
	for _, n := range spec.Metrics {
		r, ok := res.Values[n]
		if ok && !Unmeasured(r, measured) && (r.Value != nil || !slices.Contains(spec.WhenApplicable, n)) {
			shown = append(shown, n)
		}
	}
	lines := summaryHeader(run.Meta, boundaries(res, shown))
	nameW := 0
	for _, n := range shown {
		nameW = max(nameW, utf8.RuneCountInString(res.Values[n].NameOf(n)))
	}
	invalid := InvalidatedBy(res)
	for _, n := range shown {
		r := res.Values[n]
		unit := r.Unit
		if b := BoundaryLabel(r.Boundary); b != "" {
			unit += " [" + b + "]"
		}
		label := r.NameOf(n)
		pad := strings.Repeat(" ", nameW-utf8.RuneCountInString(label))
		line := strings.TrimRight(fmt.Sprintf("  %s%s %12s %s", label, pad, FormatValue(r), unit), " ")
		note := strings.TrimPrefix(r.Note, "not applicable: ")
		if by := invalid[n]; len(by) > 0 && r.Value != nil {
			note = InvalidNote(by)
		}
		switch {
		case note == "":
		case utf8.RuneCountInString(line)+3+utf8.RuneCountInString(note) <= SummaryWidth:
			line += " (" + note + ")"
		default:
			lines = append(lines, line)
			line = "    (" + note + ")"
		}
		lines = append(lines, wrap(line, SummaryWidth, "     ")...)
	}
	lines = append(lines, summaryChecks(res, spec.Checks)...)
	if res.Excluded {
		reason := res.ExcludeReason
		if r, _, ok := strings.Cut(reason, ": "); ok && strings.HasPrefix(r, "check ") {
			reason = r // the check and its reason are listed above
		}
		lines = append(lines, wrap("EXCLUDED from formal results: "+reason, SummaryWidth, "  ")...)
	}
	for _, n := range spec.Notes {
		lines = append(lines, wrap(n, SummaryWidth, "  ")...)
	}
	if spec.Hint != "" {
		lines = append(lines, wrap(spec.Hint, SummaryWidth, "  ")...)
	}
	d.Sections = nil
	for _, l := range lines {
		d.Add(&doc.Text{Text: l})
	}
	return d
}

// InvalidatedBy maps each metric that a failed check of res invalidates
// (the check's declaration, record.Result.Invalidated) to those checks,
// in results order. A check that invalidates the whole run is left out:
// the run's exclusion says it.
func InvalidatedBy(res *record.Results) map[string][]string {
	out := map[string][]string{}
	if res == nil {
		return out
	}
	for _, c := range res.Order {
		r := res.Values[c]
		if r.Kind != "check" || r.Passed == nil || *r.Passed {
			continue
		}
		for _, m := range r.Invalidated() {
			if m != record.InvalidatesAll {
				out[m] = append(out[m], c)
			}
		}
	}
	return out
}

// InvalidNote is the mark of a figure the failed checks by invalidate:
// "invalid: check first_token_times_exact failed".
func InvalidNote(by []string) string {
	return "invalid: check " + strings.Join(by, ", ") + " failed"
}

// boundaries lists the boundaries (GPU, CPU/DRAM, node) of the shown
// metrics that have a value, in order of first appearance.
func boundaries(res *record.Results, shown []string) []string {
	var out []string
	for _, n := range shown {
		r := res.Values[n]
		if b := BoundaryLabel(r.Boundary); b != "" && r.Value != nil && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// CheckNote is what the profile says of a check.
type CheckNote struct {
	Message  string
	Expected string
}

// summaryHeader names the run and the boundaries of its energy figures
// and, for a simulated one, says so.
func summaryHeader(m record.Meta, bounds []string) []string {
	lines := wrap(fmt.Sprintf("run %s · status %s", m.RunID, m.Status), SummaryWidth, "  ")
	second := fmt.Sprintf("profile %s · engine %s · model %s", m.Profile.Name, orDash(m.Engine.Kind), orDash(m.Engine.Model))
	if len(bounds) > 0 {
		second += " · energy boundary " + strings.Join(bounds, ", ")
	}
	lines = append(lines, wrap(second, SummaryWidth, "  ")...)
	if m.Simulated {
		lines = append(lines, wrap(simulatedShort+simHardwareSuffix(m), SummaryWidth, "  ")...)
	}
	if wn := WorkloadNote(m); wn != "" {
		lines = append(lines, wrap(wn, SummaryWidth, "  ")...)
	}
	return lines
}

// summaryChecks counts the checks that passed or do not apply and lists
// each failed one: FAIL with its severity, message and detail; a warn check
// whose failure is expected somewhere, in one line with where.
func summaryChecks(res *record.Results, notes map[string]CheckNote) []string {
	passed, na, total := 0, 0, 0
	var failed []string
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind != "check" {
			continue
		}
		total++
		switch {
		case r.Passed != nil && *r.Passed:
			passed++
		case r.Passed == nil:
			na++
		default:
			failed = append(failed, checkLines(n, r, notes[n])...)
		}
	}
	if total == 0 {
		return nil
	}
	head := fmt.Sprintf("checks: %d passed, %d not applicable", passed, na)
	if n := total - passed - na; n > 0 {
		head += fmt.Sprintf(", %d failed:", n)
	}
	return append([]string{head}, failed...)
}

// checkLines are a failed check's lines in the summary.
func checkLines(name string, r record.Result, note CheckNote) []string {
	msg, detail := InWords(r.Message), ""
	if note.Message != "" && strings.HasPrefix(r.Message, note.Message+": ") {
		// The evaluator appends the detail after ": "; keep them apart.
		msg, detail = note.Message, strings.TrimPrefix(r.Message, note.Message+": ")
	}
	if expected := note.Expected; r.Severity == "warn" && expected != "" {
		text := detail
		if text == "" {
			text = msg
		}
		return wrap(fmt.Sprintf("  warn %s: %s (%s)", name, text, expected), SummaryWidth, "    ")
	}
	head := fmt.Sprintf("  FAIL %s [%s]: %s", name, r.Severity, msg)
	if r.Severity == "warn" {
		head = fmt.Sprintf("  warn %s: %s", name, msg)
	}
	out := wrap(head, SummaryWidth, "    ")
	if detail != "" {
		out = append(out, wrap("    "+detail, SummaryWidth, "    ")...)
	}
	return out
}

// wrap breaks s at spaces into lines of at most width columns (a word
// longer than that stays whole); lines after the first start with indent.
func wrap(s string, width int, indent string) []string {
	if utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = lead + w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = indent + w
		}
	}
	return append(lines, cur)
}
