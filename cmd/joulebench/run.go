package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/runner"
)

func (a *app) runCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run PROFILE",
		Short: "Run a profile's procedure against an engine and archive everything",
		Long: `run executes a profile's steps (preflight, monitor, baseline, start and verify
the engine, warm-up, formal requests, release, archive), writes the raw data
to a new run directory as it arrives, then evaluates the profile and prints
the results. With no engine flag it uses the built-in simulator (engine and
GPU), which every output labels SIMULATED.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			labels, _ := cmd.Flags().GetStringArray("label")
			return a.run(cmd.Context(), args[0], sets, labels, cmd.Flags().Changed)
		},
	}
	f := cmd.Flags()
	a.engineFlags(f)
	telemetryFlags(f)
	f.String("dataset", "", "request set: a built-in (chat, code, long-context), random (synthetic), sharegpt or hf:OWNER/NAME[@REV]/PATH (downloaded to $XDG_CACHE_HOME/joulebench), or a file")
	datasetFlags(f)
	f.String("dataset-format", "", "dataset format: sharegpt, jsonl, chat, code, conversation (multi-turn, sent turn by turn) (default: detect)")
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("quick", true, "with the simulator, apply the profile's quick parameter set (its quick section: e.g. shorter baseline and release hold)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.Int("runs", 0, "asiai: measured runs per prompt (the same as --set runs=N)")
	loadFlags(f)
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	resultsFlags(f, "format of the results (table: a summary of the headline figures; --all for every value), and of the side-by-side and winner tables of several engines: table, markdown (to paste into an issue or pull request), csv, json")
	multiEngineFlags(f)
	f.Bool("wide", false, "draw the final comparison's tables at their full width (default: fitted to the terminal, 120 columns off one)")
	setFlag(f)
	baselineFlags(f)
	gpuSettingsFlags(f)
	return cmd
}

// run maps the flags onto a runner.Spec, runs it (one engine, each
// engine in turn, or a sweep: see package runner) and renders what it
// returns: with several engines the side-by-side and winner tables, with a
// sweep one row per value and engine.
//
// changed reports whether the user set a flag on the command line: every
// flag is checked against the engine it would configure before any
// directory is created.
func (a *app) run(ctx context.Context, profile string, sets, labelArgs []string, changed func(string) bool) error {
	sets, err := runner.RunsSet(sets, a.v.GetInt("runs"), changed("runs"))
	if err != nil {
		return err
	}
	console := &progress.Console{W: a.errOut}
	res, err := runner.Run(ctx, a.runSpec(profile, sets, labelArgs, changed, console))
	if err != nil {
		return err
	}
	format := a.v.GetString("format")
	switch {
	case res.Sweep != nil:
		fmt.Fprintf(a.out, "\n== sweep of %s (%s): one row per value and engine\n", res.Sweep.Name, res.Parent)
		if err := res.Sweep.Render(a.out, format); err != nil {
			return err
		}
	case res.Parent != "":
		fmt.Fprintf(a.out, "\n== engines side by side (%s)\n", res.Parent)
		// compare prints its table, then says whether a formula could not
		// be evaluated; the winner table follows either way.
		cmpErr := a.compare(ctx, []string{res.Parent}, "", compare.BuiltinName, nil, format)
		if err := a.winnerTable(res.Dirs, format); err != nil && cmpErr == nil {
			cmpErr = err
		}
		if len(res.Errs) > 0 {
			return res.Errs[0] // a failed engine run is the cause of what compare lacks
		}
		return cmpErr
	}
	if len(res.Errs) > 0 {
		return res.Errs[0]
	}
	return nil
}

// runSpec maps the run command's flags and configuration onto the run
// library's specification, with the hooks through which it opens the power
// source, draws progress and shows results.
func (a *app) runSpec(profile string, sets, labelArgs []string, changed func(string) bool, console *progress.Console) runner.Spec {
	v := a.v
	return runner.Spec{
		Profile:        profile,
		Sets:           sets,
		Labels:         labelArgs,
		ModelParams:    v.GetString("model-params"),
		Engines:        v.GetStringSlice("engine"),
		EngineGiven:    v.IsSet("engine"),
		Engine:         a.engineOptions(),
		Deployment:     v.GetString("deployment"),
		Dataset:        a.datasetOptions(),
		Load:           a.loadFlagsGiven(changed),
		Out:            v.GetString("out"),
		Quick:          v.GetBool("quick"),
		Sweep:          v.GetString("sweep"),
		CooldownIdleW:  v.GetFloat64("cooldown-idle-w"),
		SteadyRequests: v.GetBool("steady-requests"),
		Format:         v.GetString("format"),
		OutputFile:     v.GetString("output-file"),
		ExtraBody:      v.GetString("extra-body"),
		ImageDigest:    v.GetString("image-digest"),
		Replay:         v.GetString("replay"),
		Baseline:       v.GetString("baseline"),
		Changed:        changed,
		GPU:            a.gpuOptions(),

		Registry:       a.engines,
		FindProfile:    a.finder().Find,
		OpenTelemetry:  a.telemetry().Open,
		CheckTelemetry: a.telemetry().Check,
		CheckOutput:    func() error { _, err := a.resultsView(); return err },
		StartProgress: func(tel record.TelemetryInfo, sim bool) (func(runprogress.Snapshot), func()) {
			return a.progress(a.telemetry().PowerLabel(tel, sim), console)
		},
		Report: a.showRun,

		Messages: a.errOut,
		Console:  console,
		LogLevel: a.log.GetLevel(),
		Redact:   a.redact,
		Version:  version,
	}
}

// showRun prints a finished run's results table (beside the baseline's
// with --baseline); the checks decide the exit code.
//
// The results are evaluated again from the archive exactly as `analyze
// DIR` evaluates them (the archived profile and parameters), so that the
// exit code of run is the one analyze gives on its archive: 4 when a
// formula could not be evaluated (a replay that ends mid-run, say), 3
// when a check of severity fail or exclude did not pass.
func (a *app) showRun(ctx context.Context, r runner.Report) error {
	view, err := a.resultsView()
	if err != nil {
		return err
	}
	defer fmt.Fprintf(a.out, "archive: %s\n", r.Dir)
	if base := a.v.GetString("baseline"); base != "" {
		return a.gateRun(ctx, r.Loaded, r.Run, base, view.format, view.all)
	}
	view.hint = "every value: joulebench analyze " + r.Dir + " --all"
	if r.OneOfMany {
		// One run of several (engines, sweep values): its summary; --format
		// is the side-by-side tables'.
		view.format, view.all, view.file = report.FormatTable, false, ""
	}
	return a.evaluateAndShow(ctx, r.Dir, "", nil, view)
}
