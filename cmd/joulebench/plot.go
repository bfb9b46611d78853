package main

import (
	"context"

	"github.com/spf13/cobra"

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

plot --frontier DIR... draws the energy–latency points of the runs (run
directories or directories of runs) as compare decides on them: every point
the decision weighed, its J/token on the decision's basis (named on the y
axis) against the latency its SLO's target implies (tpot_p90_ms for an
attainment target of 0.9; without an SLO --latency), one line per GPU
setting (and configuration) through its load points, each point labelled
with its load and setting ("c32 · 250 W"), points no other beats on both
axes filled, the SLO's bound a dashed line and the decision's choice
ringed. Where the decision chose nothing it draws compare's frontier
(configurations measured at two loads or more) (default --out
frontier.png).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if fr, _ := cmd.Flags().GetBool("frontier"); fr {
				return cobra.MinimumNArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			if a.v.GetBool("frontier") {
				return a.writeFrontierPlot(cmd.Context(), args, a.v.GetString("out"))
			}
			return a.profiles().Plot(cmd.Context(), a.out, args[0], a.v.GetString("profile"), sets, a.v.GetString("out"), a.figureOptions(), a.warnEval)
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
// dirs into out (analysis.Profiles.FrontierPlot).
func (a *app) writeFrontierPlot(ctx context.Context, dirs []string, out string) error {
	fo, _ := a.frontierOptions() // checked by FrontierPlot
	return a.profiles().FrontierPlot(ctx, a.out, dirs, a.v.GetString("profile"), out, a.figureOptions(), fo, a.warnEval)
}

// figureOptions reads --width and --height.
func (a *app) figureOptions() plot.Options {
	return plot.Options{Width: a.v.GetInt("width"), Height: a.v.GetInt("height")}
}
