package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report/htmlreport"
)

func (a *app) compareCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compare DIR...",
		Short: "Compare archived runs as the benchmark-1.5 methodology does",
		Long: `compare loads archived runs (run directories, or directories of runs),
re-evaluates each with its own archived profile (or --profile), and renders
the cross-run analysis of the benchmark-1.5 methodology:

  - runs grouped by scenario/task, size group (total parameters), model and
    engine, with steady-state and full-lifecycle J/token, startup and
    release energy;
  - what each flag removes, as the comparison profile says: a run without
    steady state loses only its steady-state J/token; release not closed,
    a failed check of severity fail or failed formal requests above the
    threshold put the whole run out of the statistics, shown with why;
  - vLLM vs SGLang pairs, compared only when they ran the same
    configuration (request set sha256, max_tokens policy, tensor
    parallelism, context length, precision) and their formal output tokens
    are within the tolerance; a pair that differs names the field;
  - within each scenario and size group: medians, their ratio, model ranks
    and the Spearman correlation between the two bases; a configuration run
    several times shows n, median, min–max and spread; a labelled
    cross-group table apart;
  - asiai runs per engine (median, min–max, mean ± pooled std, stability).

The rules and thresholds are a comparison profile (built-in: compare-1.5);
--compare-profile FILE uses an edited copy. A run some formulas fail on is
shown with the values it lacks flagged; an archive that cannot be read
stops the command with an error naming it.

--format html --out FILE.html writes these tables as one self-contained
page, with J/token against latency per configuration and a section per
run that the tables link to.

Runs of one configuration that differ only in their load (mode,
concurrency, rate) are the load points of its energy–latency frontier:
per model × engine × scenario, each point's J/token (steady-state where
reached, else the formal window; j_per_good_token when the runs have an
SLO) against --latency, Pareto-optimal points marked, and the lowest
J/token meeting the SLO (--latency-max, --slo-attainment) with the load
that achieves it. 'joulebench plot --frontier DIR...' draws it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.compareOut(cmd.Context(), args, a.v.GetString("profile"), a.v.GetString("compare-profile"), sets, a.v.GetString("format"), a.v.GetString("out"))
		},
	}
	cmd.Flags().String("profile", "", "evaluate every run with this profile instead of its own")
	cmd.Flags().String("compare-profile", compare.BuiltinName, "comparison rules: the built-in compare-1.5 or a YAML file")
	cmd.Flags().String("format", "table", outFormatHelp)
	cmd.Flags().String("out", "", outFileHelp)
	setFlag(cmd.Flags())
	frontierFlags(cmd)
	return cmd
}

// frontierFlags are the energy–latency frontier's flags (compare, sweep).
func frontierFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("latency", compare.DefaultLatency, "latency of the energy–latency frontier: "+strings.Join(compare.LatencyMetrics, ", "))
	f.Float64("latency-max", 0, "frontier SLO: a load point meets it when its --latency is at most this many ms (0: no bound)")
	f.Float64("slo-attainment", 0.99, "frontier SLO: a load point whose run has slo_attainment meets it only when at least this")
}

// frontierOptions reads the frontier's flags (absent on a command: the
// defaults).
func (a *app) frontierOptions() (compare.FrontierOptions, error) {
	fo := compare.FrontierOptions{Latency: a.v.GetString("latency"), LatencyMax: a.v.GetFloat64("latency-max"), Attainment: a.v.GetFloat64("slo-attainment")}
	if err := compare.CheckLatency(fo.Latency); err != nil {
		return fo, invalidf("--latency: %v", err)
	}
	if fo.LatencyMax < 0 || fo.Attainment < 0 || fo.Attainment > 1 {
		return fo, invalidf("--latency-max must not be negative and --slo-attainment must be in [0, 1]")
	}
	return fo, nil
}

func (a *app) compare(ctx context.Context, paths []string, profile, rules string, sets []string, format string, na ...compare.NotApplicable) error {
	return a.compareOut(ctx, paths, profile, rules, sets, format, "", na...)
}

// compareOut is compare writing to the file out ("": standard output).
func (a *app) compareOut(ctx context.Context, paths []string, profile, rules string, sets []string, format, out string, na ...compare.NotApplicable) error {
	if err := checkOutFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	prof, err := compare.ReadProfile(rules)
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("invalid comparison profile:\n%w", err))
	}
	fo, err := a.frontierOptions()
	if err != nil {
		return err
	}
	runs, evalErr, err := a.evaluateRuns(ctx, paths, profile, sets)
	if err != nil {
		return err
	}
	err = a.toOut(out, func(w io.Writer) error {
		if format == htmlreport.Format {
			return htmlreport.WriteCompare(w, prof.CompareWith(runs, fo, na...), runs, htmlreport.Options{Version: version})
		}
		return compare.Render(w, prof.CompareWith(runs, fo, na...), format)
	})
	if err != nil {
		return err
	}
	// As analyze: the comparison is shown, and the exit code says that
	// some values are missing.
	return withCode(exitEval, evalErr)
}

// evaluateRuns finds the run directories among paths and evaluates each.
// A run some formulas failed on is kept (the values it lacks flag it) and
// named in evalErr; an archive that cannot be read is an error naming it.
func (a *app) evaluateRuns(ctx context.Context, paths []string, profile string, sets []string) (runs []compare.Run, evalErr, err error) {
	dirs, err := compare.Discover(paths)
	if err != nil {
		return nil, nil, withCode(exitInvalid, err)
	}
	runs = make([]compare.Run, 0, len(dirs))
	var evalErrs []error
	for _, dir := range dirs {
		run, res, evalErr, err := a.evaluateArchive(ctx, dir, profile, sets)
		if err != nil {
			return nil, nil, wrapRunErr(dir, err)
		}
		if evalErr != nil {
			a.log.Warn().Str("run", dir).Err(evalErr).Msg("some formulas could not be evaluated")
			evalErrs = append(evalErrs, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, evalErr))
		}
		runs = append(runs, compare.Run{Dir: dir, Meta: run.Meta, Results: res})
	}
	return runs, errors.Join(evalErrs...), nil
}

// wrapRunErr names the run directory in an error, keeping its exit code.
func wrapRunErr(dir string, err error) error {
	code := exitCode(err)
	return withCode(code, fmt.Errorf("run %s: %w", dir, err))
}
