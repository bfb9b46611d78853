package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/workflow"
)

// baselineFlags registers the regression gate's flags (run, analyze).
func baselineFlags(fs *pflag.FlagSet) {
	fs.String("baseline", "", "a baseline run archive: evaluate the same profile on it, expose baseline.METRIC to checks and show each metric beside it")
	fs.Bool("baseline-force", false, "compare with a baseline of another model, engine, request set or profile")
}

// gateRun evaluates l over run against the baseline at dir, prints each
// metric beside its baseline, and returns the checks' outcome (exit 3 when
// a check of severity fail or exclude did not pass).
func (a *app) gateRun(ctx context.Context, l *workflow.Loaded, run *archive.Run, dir, format string, all bool) error {
	g, err := runner.LoadBaseline(ctx, dir, l, run.Meta, a.v.GetBool("baseline-force"))
	if err != nil {
		return err
	}
	res, evalErr := workflow.EvaluateBaseline(ctx, l, run, g.Values)
	if res == nil {
		return withCode(exitInvalid, evalErr)
	}
	if err := report.ResultsWithBaseline(a.out, report.Run{Meta: run.Meta, Results: res}, report.Run{Meta: g.Run.Meta, Results: g.Results}, format, all); err != nil {
		return err
	}
	if evalErr != nil {
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", run.Dir, evalErr))
	}
	return checksOutcome(res)
}
