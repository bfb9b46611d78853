package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/runner/runflags"
	"github.com/joulebench/joulebench/workflow"
)

// baselineFlags registers the regression gate's flags (run, analyze).
func baselineFlags(fs *pflag.FlagSet) { runflags.BaselineFlags(fs) }

// gateRun gates run on the baseline at dir (analysis.Gate): each metric
// beside its baseline, exit 3 when a fail or exclude check did not pass.
func (a *app) gateRun(ctx context.Context, l *workflow.Loaded, run *record.Run, dir, format string, all bool) error {
	g, err := runner.LoadBaseline(ctx, dir, l, run.Meta, a.v.GetBool("baseline-force"))
	if err != nil {
		return err
	}
	return analysis.Gate(ctx, a.out, l, run, report.Run{Meta: g.Run.Meta, Results: g.Results}, g.Values, format, all)
}
