package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/compare"
)

func (a *app) compareCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compare DIR...",
		Short: "Compare archived runs as the benchmark-1.5 methodology does",
		Long: `compare loads archived runs (run directories, or directories of runs),
re-evaluates each with its own archived profile (or --profile), and renders
the cross-run analysis of the benchmark-1.5 methodology: runs grouped by
scenario, size group, model and engine; what each flag removes (a run
without steady state loses only its steady-state J/token; release not
closed, a failed fail check or too many failed requests put a run out,
shown with why); vLLM vs SGLang pairs of the same configuration; medians,
ratios, ranks and Spearman within each scenario and size group; asiai runs
per engine. The rules and thresholds are a comparison profile (built-in:
compare-1.5; --compare-profile FILE uses an edited copy); docs/compare.md
and docs/methodology.md say what each does.

A run some formulas fail on is shown with the values it lacks flagged (exit
4); an archive that cannot be read stops the command with an error naming
it. --format html --out FILE.html writes the tables as one self-contained
page. Runs of one configuration that differ only in their load are the
points of its energy–latency frontier: J/token against --latency (by
default the SLO's own metric: runs of an slo search carry their SLO as
slo_* parameters), Pareto-optimal points marked. The output opens with the
decision: over every configuration compared, the point with the lowest
--objective (J/token) meeting the SLO (the runs' own, or --latency-max and
--slo-attainment), the interval of its J/token, the runner-up and whether
it is separable from it, and why each other point is out; every other
view (frontier, GPU settings) shows that one choice on its basis.
'joulebench plot --frontier DIR...' draws the frontier.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.compareOut(cmd.Context(), args, a.v.GetString("profile"), a.v.GetString("compare-profile"), sets, a.v.GetString("format"), a.v.GetString("out"), false)
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
	f.String("latency", "", "latency of the energy–latency frontier: "+strings.Join(compare.LatencyMetrics, ", ")+
		" (default: the SLO's own metric where the runs carry one, the percentile its attainment target implies, e.g. tpot_p90_ms for a TPOT bound at 0.9, else "+compare.DefaultLatency+")")
	f.Float64("latency-max", 0, "frontier SLO: a load point meets it when its --latency is at most this many ms (0: no bound)")
	f.Float64("slo-attainment", 0, "frontier SLO: a load point whose run has slo_attainment meets it only when at least this (0: the run's own slo_attainment_target, else 0.99)")
	f.String("objective", compare.Objectives[0], "what the decision minimises among the points meeting the SLO: "+strings.Join(compare.Objectives, ", "))
}

// frontierOptions reads the frontier's flags (absent on a command: the
// defaults).
func (a *app) frontierOptions() (compare.FrontierOptions, error) {
	fo := compare.FrontierOptions{Latency: a.v.GetString("latency"), LatencyMax: a.v.GetFloat64("latency-max"), Attainment: a.v.GetFloat64("slo-attainment"),
		Objective: a.v.GetString("objective")}
	return fo, analysis.CheckFrontier(fo)
}

func (a *app) compare(ctx context.Context, paths []string, profile, rules string, sets []string, format string, na ...compare.NotApplicable) error {
	return a.compareOut(ctx, paths, profile, rules, sets, format, "", !a.v.GetBool("wide"), na...)
}

// compareOut is compare writing to the file out ("": standard output).
func (a *app) compareOut(ctx context.Context, paths []string, profile, rules string, sets []string, format, out string, fit bool, na ...compare.NotApplicable) error {
	if err := analysis.CheckOutFormat(format); err != nil {
		return err
	}
	fo, _ := a.frontierOptions() // checked by Compare
	c, err := a.profiles().Compare(ctx, paths, profile, rules, sets, fo, a.warnEval, na...)
	if err != nil {
		return err
	}
	c.Fit = fit
	if err := a.toOut(out, func(w io.Writer) error { return c.Render(w, format, version) }); err != nil {
		return err
	}
	// As analyze: the comparison is shown, and the exit code says that
	// some values are missing.
	return withCode(exitEval, c.EvalErr)
}

// warnEval logs that some formulas could not be evaluated on a run.
func (a *app) warnEval(dir string, evalErr error) {
	a.log.Warn().Str("run", dir).Err(evalErr).Msg("some formulas could not be evaluated")
}
