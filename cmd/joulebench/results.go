package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// resultsFlags registers how run and analyze show a run's results.
// formatHelp is --format's help (run's also covers the side-by-side
// tables of several engines).
func resultsFlags(f *pflag.FlagSet, formatHelp string) {
	f.String("format", report.FormatTable, formatHelp)
	f.Bool("all", false, "show every value: all metrics, checks and derived values (default: the method's headline figures and any failed check)")
	f.String("output-file", "", "also write the results (every metric and check; with --all the derived values too) in --format to this file (json when --format is table)")
}

// resultsView is how the results of a run are shown: the format, --all
// and --output-file.
type resultsView struct {
	format string
	all    bool
	file   string
	// hint is the summary's last line (how to see every value).
	hint string
}

// resultsView reads and checks the flags of resultsFlags: a bad format or
// an output file in a directory that does not exist is invalid input,
// reported before anything runs.
func (a *app) resultsView() (resultsView, error) {
	v := resultsView{format: a.v.GetString("format"), all: a.v.GetBool("all"), file: a.v.GetString("output-file")}
	if v.format == "" {
		v.format = report.FormatTable
	}
	if err := report.CheckFormat(v.format); err != nil {
		return v, withCode(exitInvalid, fmt.Errorf("--format: %w", err))
	}
	if v.file != "" {
		dir := filepath.Dir(v.file)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return v, invalidf("--output-file %s: directory %s does not exist", v.file, dir)
		}
		if st, err := os.Stat(v.file); err == nil && st.IsDir() {
			return v, invalidf("--output-file %s: is a directory", v.file)
		}
	}
	return v, nil
}

// summarySpec is what the profile marks for the summary: its headline
// metrics and where a check's failure is expected.
func summarySpec(l *workflow.Loaded, hint string) report.SummarySpec {
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

// showResults prints a run's results as view asks: the summary on a
// table without --all, else the format's whole rendering; with
// --output-file the results also go, in the format (JSON for a table),
// to that file.
func (a *app) showResults(run *archive.Run, l *workflow.Loaded, res *archive.Results, view resultsView) error {
	rr := report.Run{Meta: run.Meta, Results: res}
	if view.file != "" {
		format := view.format
		if format == report.FormatTable {
			format = report.FormatJSON
		}
		var buf bytes.Buffer
		if err := report.Results(&buf, rr, format, view.all); err != nil {
			return err
		}
		if err := writeFileAtomic(view.file, buf.Bytes()); err != nil {
			return fmt.Errorf("--output-file: %w", err)
		}
	}
	if view.format == report.FormatTable && !view.all {
		err := report.Summary(a.out, rr, summarySpec(l, view.hint))
		if err == nil && view.file != "" {
			fmt.Fprintf(a.out, "results (%s): %s\n", view.format, view.file)
		}
		return err
	}
	if view.file != "" {
		fmt.Fprintf(a.out, "results (%s): %s\n", view.format, view.file)
		return nil
	}
	return report.Results(a.out, rr, view.format, view.all)
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

// evaluateAndShow evaluates a run archive as analyze does (its own
// profile, or profile) and shows the results; the exit code is analyze's:
// 4 when a formula could not be evaluated, 3 when a fail or exclude check
// did not pass. run uses it on the archive it has just written, so that
// `run` and `analyze` of the same directory exit alike.
func (a *app) evaluateAndShow(ctx context.Context, dir, profile string, sets []string, view resultsView) error {
	run, l, res, evalErr, err := a.evaluateArchiveLoaded(ctx, dir, profile, sets)
	if err != nil {
		return err
	}
	if err := a.showResults(run, l, res, view); err != nil {
		return err
	}
	if evalErr != nil {
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, evalErr))
	}
	return checksOutcome(res)
}
