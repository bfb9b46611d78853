package main

import (
	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/compare"
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
	cmd.Flags().String("format", "table", "output format: "+formatList())
	setFlag(cmd.Flags())
	return cmd
}

// estimate maps estimate's flags to analysis.Profiles.Estimate.
func (a *app) estimate(cmd *cobra.Command, dir string, sets []string) error {
	in := analysis.EstimateInput{Dir: dir, Profile: a.v.GetString("profile"), Sets: sets,
		Requests: a.v.GetString("requests"), Rules: a.v.GetString("compare-profile"), Format: a.v.GetString("format")}
	return a.profiles().Estimate(cmd.Context(), a.out, in, a.warnEval)
}
