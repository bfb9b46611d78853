package analysis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// View is how the results of a run are shown (run's and analyze's
// --format, --all and --output-file).
type View struct {
	Format string
	All    bool
	// File also receives the results, in Format (JSON for a table).
	File string
	// Hint is the summary's last line (how to see every value).
	Hint string
	// Params, when set, is where the parameters came from, a line the
	// table and Markdown renderings end with (before Hint).
	Params string
}

// CheckView checks a view before anything runs: a bad format, or an output
// file in a directory that does not exist or that is a directory, is
// invalid input. An empty format is a table.
func CheckView(v View) (View, error) {
	if v.Format == "" {
		v.Format = report.FormatTable
	}
	if err := report.CheckFormat(v.Format); err != nil {
		return v, exitcode.With(exitcode.Invalid, fmt.Errorf("--format: %w", err))
	}
	if v.File != "" {
		dir := filepath.Dir(v.File)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return v, exitcode.Invalidf("--output-file %s: directory %s does not exist", v.File, dir)
		}
		if st, err := os.Stat(v.File); err == nil && st.IsDir() {
			return v, exitcode.Invalidf("--output-file %s: is a directory", v.File)
		}
	}
	return v, nil
}

// SummarySpec is what the profile marks for the summary: its headline
// metrics and where a check's failure is expected (l nil: none).
func SummarySpec(l *workflow.Loaded, hint string) report.SummarySpec {
	spec := report.SummarySpec{Checks: map[string]report.CheckNote{}, Hint: hint}
	if l == nil {
		return spec
	}
	for _, m := range l.Profile.Metrics {
		switch m.Summary {
		case workflow.SummaryAlways:
			spec.Metrics = append(spec.Metrics, m.Name)
		case workflow.SummaryApplicable:
			spec.Metrics = append(spec.Metrics, m.Name)
			spec.WhenApplicable = append(spec.WhenApplicable, m.Name)
		}
	}
	for _, c := range l.Profile.Checks {
		spec.Checks[c.Name] = report.CheckNote{Message: c.Message, Expected: c.Expected}
	}
	return spec
}

// ShowResults writes a run's results to w as v asks: the summary on a
// table without All, else the format's whole rendering; with File the
// results also go, in the format (JSON for a table), to that file, and w
// gets a line naming it instead of the rendering.
func ShowResults(w io.Writer, run *record.Run, l *workflow.Loaded, res *record.Results, v View) error {
	rr := report.Run{Meta: run.Meta, Results: res}
	f, _ := doc.Lookup(v.Format)
	if v.File != "" {
		format := v.Format
		if f.File != "" {
			format = f.File
		}
		var buf bytes.Buffer
		if err := report.Results(&buf, rr, format, v.All); err != nil {
			return err
		}
		if err := writeFileAtomic(v.File, buf.Bytes()); err != nil {
			return fmt.Errorf("--output-file: %w", err)
		}
	}
	if f.Terminal && !v.All {
		spec := SummarySpec(l, v.Hint)
		if v.Params != "" {
			spec.Notes = append(spec.Notes, v.Params)
		}
		err := doc.Render(w, report.SummaryDoc(rr, spec), v.Format)
		if err == nil && v.File != "" {
			fmt.Fprintf(w, "results (%s): %s\n", v.Format, v.File)
		}
		return err
	}
	if v.File != "" {
		fmt.Fprintf(w, "results (%s): %s\n", v.Format, v.File)
		return nil
	}
	d := report.ResultsDoc(rr, v.All)
	if v.Params != "" {
		d.Add(&doc.Text{Text: v.Params}) // read by people: not in the data or JSON
	}
	return doc.Render(w, d, v.Format)
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so that a reader never sees half a file.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// ShowRun evaluates the run archive dir as analyze does (its own profile, or
// profile) and shows the results on w (ShowResults). The error carries
// analyze's exit code: Eval when a formula could not be evaluated, Checks
// when a fail or exclude check did not pass. run uses it on the archive it
// has just written, so that `run` and `analyze` of a directory exit alike.
func (p Profiles) ShowRun(ctx context.Context, w io.Writer, dir, profile string, sets []string, v View) error {
	e, err := p.evaluate(ctx, dir, profile, sets, true)
	if err != nil {
		return err
	}
	if profile != "" {
		// Another profile than the run's: say whose values were used.
		v.Params = e.Params.String()
	}
	if err := ShowResults(w, e.Run, e.Loaded, e.Results, v); err != nil {
		return err
	}
	if e.EvalErr != nil {
		return exitcode.With(exitcode.Eval, NotEvaluated(dir, e.EvalErr))
	}
	return ChecksOutcome(e.Results)
}

// Gate evaluates l over run with the baseline's values (baseline.METRIC in
// its checks), writes each metric beside the baseline's to w, and returns
// the checks' outcome: Checks when a fail or exclude check did not pass,
// Eval when a formula could not be evaluated.
func Gate(ctx context.Context, w io.Writer, l *workflow.Loaded, run *record.Run, base report.Run, values *metricdefs.Baseline, format string, all bool) error {
	res, evalErr := workflow.EvaluateBaseline(ctx, l, run, values)
	if res == nil {
		return exitcode.With(exitcode.Invalid, evalErr)
	}
	if err := report.ResultsWithBaseline(w, report.Run{Meta: run.Meta, Results: res}, base, format, all); err != nil {
		return err
	}
	if evalErr != nil {
		return exitcode.With(exitcode.Eval, NotEvaluated(run.Dir, evalErr))
	}
	return ChecksOutcome(res)
}
