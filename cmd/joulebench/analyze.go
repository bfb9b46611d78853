package main

import (
	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
)

func (a *app) analyzeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Re-evaluate an archived run from its raw data with a profile",
		Long:  analysis.AnalyzeHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.analyze(cmd, args[0], a.v.GetString("profile"), sets)
		},
	}
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	resultsFlags(cmd.Flags(), "output format: table (a summary of the headline figures; --all for every value), json, csv, markdown")
	setFlag(cmd.Flags())
	baselineFlags(cmd.Flags())
	return cmd
}

// profiles loads profiles as run, analyze and validate do: by name from
// finder's directories.
func (a *app) profiles() analysis.Profiles {
	return analysis.Profiles{Finder: a.finder(), LimitMemory: analysis.LimitEvalMemory}
}

func (a *app) analyze(cmd *cobra.Command, dir, profile string, sets []string) error {
	view, err := a.resultsView()
	if err != nil {
		return err
	}
	view.hint = "every value: joulebench analyze " + dir + " --all"
	if base := a.v.GetString("baseline"); base != "" {
		e, err := a.profiles().Evaluate(cmd.Context(), dir, profile, sets)
		if err != nil {
			return err
		}
		return a.gateRun(cmd.Context(), e.Loaded, e.Run, base, view.format, view.all)
	}
	return a.evaluateAndShow(cmd.Context(), dir, profile, sets, view)
}
