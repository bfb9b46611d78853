package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// baselineFlags registers the regression gate's flags (run, analyze).
func baselineFlags(fs *pflag.FlagSet) {
	fs.String("baseline", "", "a baseline run archive: evaluate the same profile on it, expose baseline.METRIC to checks and show each metric beside it")
	fs.Bool("baseline-force", false, "compare with a baseline of another model, engine, request set or profile")
}

// gate is a baseline run evaluated with the profile under test.
type gate struct {
	dir     string
	run     *archive.Run
	results *archive.Results
	values  *metricdefs.Baseline
}

// loadBaseline evaluates the profile l on the baseline archive dir. It
// refuses a baseline that is not comparable with cur unless force.
func loadBaseline(ctx context.Context, dir string, l *workflow.Loaded, cur archive.Meta, force bool) (*gate, error) {
	run, err := archive.LoadData(dir) // evaluated again: its results.json is not read
	if err != nil {
		return nil, withCode(exitInvalid, fmt.Errorf("--baseline: %w", err))
	}
	if err := comparable(cur, run.Meta, l.Profile.Name); err != nil && !force {
		return nil, withCode(exitInvalid, fmt.Errorf("--baseline %s is not comparable: %w (--baseline-force compares anyway)", dir, err))
	}
	res, evalErr := workflow.Evaluate(ctx, l, run)
	if res == nil {
		return nil, withCode(exitInvalid, fmt.Errorf("--baseline %s: %w", dir, evalErr))
	}
	return &gate{dir: dir, run: run, results: res, values: metricdefs.NewBaseline(res)}, nil
}

// comparable names the first field in which a baseline run differs from
// the run under test: a gate across models, engines, request sets or
// profiles would compare different things.
func comparable(cur, base archive.Meta, profile string) error {
	fields := []struct{ name, cur, base string }{
		{"profile", profile, base.Profile.Name},
		{"engine", cur.Engine.Kind, base.Engine.Kind},
		{"model", cur.Engine.Model, base.Engine.Model},
		{"request set", cur.RequestSet.Source, base.RequestSet.Source},
		{"request set sha256", cur.RequestSet.SHA256, base.RequestSet.SHA256},
		{"request count", fmt.Sprint(cur.RequestSet.Count), fmt.Sprint(base.RequestSet.Count)},
	}
	for _, f := range fields {
		if f.cur != f.base {
			return fmt.Errorf("%s differs: %q here, %q in the baseline", f.name, f.cur, f.base)
		}
	}
	return nil
}

// gateRun evaluates l over run against the baseline at dir, prints each
// metric beside its baseline, and returns the checks' outcome (exit 3 when
// a check of severity fail or exclude did not pass).
func (a *app) gateRun(ctx context.Context, l *workflow.Loaded, run *archive.Run, dir, format string, all bool) error {
	g, err := loadBaseline(ctx, dir, l, run.Meta, a.v.GetBool("baseline-force"))
	if err != nil {
		return err
	}
	res, evalErr := workflow.EvaluateBaseline(ctx, l, run, g.values)
	if res == nil {
		return withCode(exitInvalid, evalErr)
	}
	if err := report.ResultsWithBaseline(a.out, report.Run{Meta: run.Meta, Results: res}, report.Run{Meta: g.run.Meta, Results: g.results}, format, all); err != nil {
		return err
	}
	if evalErr != nil {
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", run.Dir, evalErr))
	}
	return checksOutcome(res)
}
