package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"

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
<run directory name>.png in the current directory).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.plot(cmd, args[0], sets)
		},
	}
	cmd.Flags().String("out", "", "figure file: .png, .svg or .pdf (default: <run directory name>.png)")
	cmd.Flags().Int("width", plot.DefaultOptions.Width, "figure width in pixels (at 96 dpi)")
	cmd.Flags().Int("height", plot.DefaultOptions.Height, "figure height in pixels (at 96 dpi)")
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	setFlag(cmd.Flags())
	return cmd
}

func (a *app) plot(cmd *cobra.Command, dir string, sets []string) error {
	out := a.v.GetString("out")
	if out == "" {
		name := filepath.Base(filepath.Clean(dir))
		if abs, err := filepath.Abs(dir); err == nil {
			name = filepath.Base(abs)
		}
		if name == "" || name == "." || name == ".." || name == string(filepath.Separator) {
			name = "run"
		}
		out = name + ".png"
	}
	if _, err := plot.FormatOf(out); err != nil {
		return withCode(exitInvalid, fmt.Errorf("--out: %w", err))
	}
	if err := plot.CheckOutDir(out); err != nil { // before the evaluation
		return withCode(exitInvalid, fmt.Errorf("--out: %w", err))
	}
	opt := plot.Options{Width: a.v.GetInt("width"), Height: a.v.GetInt("height")}
	if err := opt.Validate(); err != nil {
		return withCode(exitInvalid, err)
	}
	run, res, evalErr, err := a.evaluateArchive(cmd.Context(), dir, a.v.GetString("profile"), sets)
	if err != nil {
		return wrapRunErr(dir, err)
	}
	if evalErr != nil {
		a.log.Warn().Str("run", dir).Err(evalErr).Msg("some formulas could not be evaluated")
	}
	// --set window=…, cv_max=… also set what the figure draws.
	overrides, err := parseSets(sets)
	if err != nil {
		return err
	}
	params := maps.Clone(run.Meta.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	for k, v := range overrides {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			params[k] = f
		} else {
			params[k] = v
		}
	}
	run.Meta.Parameters = params
	data, err := plot.Prepare(run, res)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	if err := plot.Save(out, data, opt); err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(a.out, "figure: %s\n", out)
	if evalErr != nil {
		// As analyze: the figure is drawn, and the exit code says that
		// some values are missing.
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, evalErr))
	}
	return nil
}
