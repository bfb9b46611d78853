package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/runner/runflags"
)

// resultsFlags registers how run and analyze show a run's results.
// formatHelp is --format's help (run's also covers the side-by-side
// tables of several engines).
func resultsFlags(f *pflag.FlagSet, formatHelp string) { runflags.ResultsFlags(f, formatHelp) }

// resultsView is how the results of a run are shown: the format, --all
// and --output-file (analysis.View).
type resultsView struct {
	format string
	all    bool
	file   string
	// hint is the summary's last line (how to see every value).
	hint string
}

// resultsView reads the flags of resultsFlags, checked by
// analysis.CheckView before anything runs.
func (a *app) resultsView() (resultsView, error) {
	v, err := analysis.CheckView(analysis.View{Format: a.v.GetString("format"), All: a.v.GetBool("all"), File: a.v.GetString("output-file")})
	return resultsView{format: v.Format, all: v.All, file: v.File}, err
}

// evaluateAndShow evaluates a run archive as analyze does and shows the
// results, exiting as analyze does (analysis.Profiles.ShowRun).
func (a *app) evaluateAndShow(ctx context.Context, dir, profile string, sets []string, view resultsView) error {
	return a.profiles().ShowRun(ctx, a.out, dir, profile, sets, analysis.View{Format: view.format, All: view.all, File: view.file, Hint: view.hint})
}
