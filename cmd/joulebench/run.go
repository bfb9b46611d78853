package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/runner/runflags"
)

func (a *app) runCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run PROFILE",
		Short: "Run a profile's procedure against an engine and archive everything",
		Long:  runner.RunHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("spec") {
				if len(args) > 0 {
					return withCode(exitInvalid, fmt.Errorf("run --spec takes no PROFILE argument (%q): the spec file names the profile", args[0]))
				}
				return nil
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.runSettings(cmd, args)
			if err != nil {
				return err
			}
			return a.run(cmd.Context(), s)
		},
	}
	f := cmd.Flags()
	runflags.Define(f, a.runRegistries())
	specFlag(f)
	return cmd
}

// specFlag registers run's --spec.
func specFlag(f *pflag.FlagSet) {
	f.String("spec", "", "run the specification in this file (JSON, as a campaign writes it for each run) instead of a PROFILE and flags; only --out, --no-progress, what a job over several nodes learns where it runs (where power is read: --telemetry, --agent; the engine parts it started: --deployment) and the secrets a spec file never holds (--api-key, --engine-url, --extra-body, --hf-endpoint, --engine-arg, --engine-env and the power sources' URLs and arguments) may be given with it")
}

// runRegistries are the engine kinds and power sources whose flags a run
// takes.
func (a *app) runRegistries() runflags.Registries {
	return runflags.Registries{Engines: a.engines, Telemetry: telemetrySources()}
}

// runSettings are the run's settings: its command line's (runflags.Build,
// the flags over the configuration file and environment), or those of
// the --spec file with the secrets from the command line and environment.
func (a *app) runSettings(cmd *cobra.Command, args []string) (runflags.Settings, error) {
	s, spec, err := runflags.Resolve(args, cmd.Flags(), a.v, a.v.Set, a.runRegistries())
	if err == nil && spec {
		err = a.useRedactor(cmd) // the spec's values are in the configuration now
	}
	return s, err
}

// run maps the settings onto a runner.Spec, runs it (one engine, each
// engine in turn, or a sweep: see package runner) and renders what it
// returns: with several engines the side-by-side and winner tables, with a
// sweep one row per value and engine.
//
// Every flag given on the command line (Settings.Changed) is checked
// against the engine it would configure before any directory is created.
func (a *app) run(ctx context.Context, s runflags.Settings) error {
	console := &progress.Console{W: a.errOut}
	spec, err := a.runSpec(s, console)
	if err != nil {
		return err
	}
	res, err := runner.Run(ctx, spec)
	if err != nil {
		return err
	}
	return res.Show(a.out, s.Format, func(parent string) error {
		return a.compare(ctx, []string{parent}, "", compare.BuiltinName, nil, s.Format)
	})
}

// runSpec is the run library's specification of the settings
// (Settings.Spec), with the hooks through which it opens the power
// source, draws progress and shows results.
func (a *app) runSpec(s runflags.Settings, console *progress.Console) (runner.Spec, error) {
	spec, err := s.Spec()
	if err != nil {
		return runner.Spec{}, err
	}
	if !s.NoProgress {
		spec.Dataset.Progress = progress.DownloadBars(a.errOut)
	}
	spec.GPU = a.gpuOptions(spec.GPU)
	spec.Registry = a.engines
	spec.FindProfile = a.finder().Find
	spec.OpenTelemetry = a.telemetry().Open
	spec.CheckTelemetry = a.telemetry().Check
	spec.CheckOutput = func() error { _, err := a.resultsView(); return err }
	spec.StartProgress = func(tel record.TelemetryInfo, sim bool) (func(runprogress.Snapshot), func()) {
		return a.progress(a.telemetry().PowerLabel(tel, sim), console)
	}
	spec.Report = a.showRun
	spec.Messages = a.errOut
	spec.Console = console
	spec.LogLevel = a.log.GetLevel()
	spec.Redact = a.redact
	spec.Version = version
	return spec, nil
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
