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
		Long:  analysis.EstimateHelp,
		Args:  cobra.ExactArgs(1),
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
