package analysis

import (
	"context"
	"fmt"
	"io"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/plot"
	"github.com/joulebench/joulebench/report"
)

// FrontierOut is the frontier figure's file when none is given.
const FrontierOut = "frontier.png"

// FrontierPlot draws the energy–latency frontier of the runs under dirs
// (evaluated with profile, "": each its own) into out ("": FrontierOut)
// and names the file on w. A figure without width and height is 1000×700.
// Formulas that fail on a run go to warn and make the error Eval once the
// figure is drawn; a figure that cannot be written is a Failure.
func (p Profiles) FrontierPlot(ctx context.Context, w io.Writer, dirs []string, profile, out string, opt plot.Options, fo compare.FrontierOptions, warn func(string, error)) error {
	if out == "" {
		out = FrontierOut
	}
	if opt.Width == 0 && opt.Height == 0 {
		opt = plot.Options{Width: 1000, Height: 700}
	}
	if err := plot.CheckOut(out, false, opt); err != nil {
		return err
	}
	c, err := p.Compare(ctx, dirs, profile, compare.BuiltinName, nil, fo, warn) // checks fo first
	if err != nil {
		return err
	}
	// The decision's points on its basis, one series per GPU setting;
	// compare's frontier where the decision chose nothing.
	fig := report.DecisionFrontier(c.Report)
	if fig == nil {
		fig = FrontierFigure(c.Report, fo.Latency)
	}
	if err := plot.SaveFrontier(out, fig, opt); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	fmt.Fprintf(w, "frontier figure: %s\n", out)
	return exitcode.With(exitcode.Eval, c.EvalErr)
}

// Plot draws the run dir (evaluated with profile and sets) into out ("":
// plot.DefaultOut) and names the file on w. The file is checked before the
// evaluation. Formulas that fail on the run go to warn and, once the
// figure is drawn, make the error Eval; a figure that cannot be written is
// a Failure.
func (p Profiles) Plot(ctx context.Context, w io.Writer, dir, profile string, sets []string, out string, opt plot.Options, warn func(string, error)) error {
	if out == "" {
		out = plot.DefaultOut(dir)
	}
	if err := plot.CheckOut(out, true, opt); err != nil {
		return err
	}
	data, e, err := p.PlotData(ctx, dir, profile, sets)
	if e != nil && e.EvalErr != nil && warn != nil {
		warn(dir, e.EvalErr)
	}
	if err != nil {
		return err
	}
	if err := plot.Save(out, data, opt); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	fmt.Fprintf(w, "figure: %s\n", out)
	if e.EvalErr != nil {
		// As analyze: the figure is drawn, and the exit code says that
		// some values are missing.
		return exitcode.With(exitcode.Eval, NotEvaluated(dir, e.EvalErr))
	}
	return nil
}
