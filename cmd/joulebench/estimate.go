package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"
)

func (a *app) estimateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "estimate DIR --requests N[,N...]",
		Short: "Estimate lifecycle GPU energy for N requests after one startup",
		Long: `estimate evaluates an archived benchmark-1.5 run and prints the
methodology's lifecycle estimate for a service that handles N requests after
one startup:

  E(N) = E_startup + N·e_ss + E_release

  e_ss = E_ss / R_ss

with E_ss the GPU energy of the steady-state window (steady_window_energy_j)
and R_ss the requests whose tokens fall in that window, each counted by the
share of its output tokens generated there (steady_window_requests), so that
e_ss = steady-state J/token × the window's mean output tokens per request.
It prints the fixed overhead per request (E_startup + E_release)/N and the
smallest N at which that overhead falls under 10 % and 1 % of the energy
per request E(N)/N. The estimate applies only when load and configuration
match the measured run and excludes idle gaps between requests; measured
values take precedence.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.estimate(cmd, args[0], sets)
		},
	}
	cmd.Flags().String("requests", "100,1000,10000,100000", "request counts N, comma-separated")
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	cmd.Flags().String("compare-profile", compare.BuiltinName, "metric names and overhead shares: the built-in compare-1.5 or a YAML file")
	cmd.Flags().String("format", "table", "output format: table, json, csv, markdown")
	setFlag(cmd.Flags())
	return cmd
}

func (a *app) estimate(cmd *cobra.Command, dir string, sets []string) error {
	format := a.v.GetString("format")
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	ns, err := compare.ParseCounts(a.v.GetString("requests"))
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("--requests: %w", err))
	}
	prof, err := compare.ReadProfile(a.v.GetString("compare-profile"))
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("invalid comparison profile:\n%w", err))
	}
	run, res, evalErr, err := a.evaluateArchive(cmd.Context(), dir, a.v.GetString("profile"), sets)
	if err != nil {
		return wrapRunErr(dir, err)
	}
	if evalErr != nil {
		a.log.Warn().Str("run", dir).Err(evalErr).Msg("some formulas could not be evaluated")
	}
	est, err := prof.EstimateRun(compare.Run{Dir: dir, Meta: run.Meta, Results: res}, ns)
	if err != nil {
		return withCode(exitEval, err)
	}
	if err := compare.RenderEstimate(a.out, est, format); err != nil {
		return err
	}
	return checksOutcome(res)
}
