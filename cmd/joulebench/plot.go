package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/plot"
)

func (a *app) plotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plot DIR [--out FILE.png|.svg|.pdf]",
		Short: "Draw where a run's energy went: power, stages, steady state, J/token",
		Long: `plot draws one archived run: GPU power over time per device and summed,
with the stages shaded and named (baseline, startup, warm-up, formal,
release), the steady-state window marked and each device's baseline ±
tolerance band over the release stage; below it, per-request J/token of the
successful formal requests in completion order, and their rolling CV against
the steady-state threshold cv_max.

The run is evaluated with its own archived profile (or --profile) to find
the steady-state window. The format follows the --out extension (default:
<run directory name>.png in the current directory).

plot --frontier DIR... draws the energy–latency frontier of the runs (run
directories or directories of runs) as compare finds it: J/token against
--latency, one line per configuration through its load points,
Pareto-optimal points filled, the lowest J/token meeting the SLO
(--latency-max, --slo-attainment) ringed (default --out frontier.png).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if fr, _ := cmd.Flags().GetBool("frontier"); fr {
				return cobra.MinimumNArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			if a.v.GetBool("frontier") {
				out := a.v.GetString("out")
				if out == "" {
					out = "frontier.png"
				}
				return a.writeFrontierPlot(cmd.Context(), args, out)
			}
			return a.plot(cmd, args[0], sets)
		},
	}
	cmd.Flags().Bool("frontier", false, "draw the energy–latency frontier of the runs DIR... instead of one run's timeline")
	frontierFlags(cmd)
	cmd.Flags().String("out", "", "figure file: .png, .svg or .pdf (default: <run directory name>.png)")
	cmd.Flags().Int("width", plot.DefaultOptions.Width, "figure width in pixels (at 96 dpi)")
	cmd.Flags().Int("height", plot.DefaultOptions.Height, "figure height in pixels (at 96 dpi)")
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	setFlag(cmd.Flags())
	return cmd
}

// writeFrontierPlot draws the energy–latency frontier of the runs under
// dirs into out.
func (a *app) writeFrontierPlot(ctx context.Context, dirs []string, out string) error {
	opt := plot.Options{Width: a.v.GetInt("width"), Height: a.v.GetInt("height")}
	if opt.Width == 0 && opt.Height == 0 {
		opt = plot.Options{Width: 1000, Height: 700}
	}
	if err := plot.CheckOut(out, false, opt); err != nil {
		return err
	}
	fo, err := a.frontierOptions()
	if err != nil {
		return err
	}
	c, err := a.profiles().Compare(ctx, dirs, a.v.GetString("profile"), compare.BuiltinName, nil, fo, a.warnEval)
	if err != nil {
		return err
	}
	if err := plot.SaveFrontier(out, analysis.FrontierFigure(c.Report, fo.Latency), opt); err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(a.out, "frontier figure: %s\n", out)
	return withCode(exitEval, c.EvalErr)
}

func (a *app) plot(cmd *cobra.Command, dir string, sets []string) error {
	out := a.v.GetString("out")
	if out == "" {
		out = plot.DefaultOut(dir)
	}
	opt := plot.Options{Width: a.v.GetInt("width"), Height: a.v.GetInt("height")}
	if err := plot.CheckOut(out, true, opt); err != nil { // before the evaluation
		return err
	}
	data, e, err := a.profiles().PlotData(cmd.Context(), dir, a.v.GetString("profile"), sets)
	if e != nil && e.EvalErr != nil {
		a.warnEval(dir, e.EvalErr)
	}
	if err != nil {
		return err
	}
	if err := plot.Save(out, data, opt); err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(a.out, "figure: %s\n", out)
	if e.EvalErr != nil {
		// As analyze: the figure is drawn, and the exit code says that
		// some values are missing.
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, e.EvalErr))
	}
	return nil
}
