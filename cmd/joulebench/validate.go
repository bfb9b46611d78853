package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
)

func (a *app) validateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE|NAME",
		Short: "Parse and compile a profile without running anything",
		Long:  analysis.ValidateHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ok, err := a.validateCampaign(args[0]); ok {
				return err
			}
			sets, _ := cmd.Flags().GetStringArray("set")
			l, name, err := a.profiles().ReadLoad(args[0], sets)
			if err != nil {
				return err
			}
			if err := a.steadyFeasible(l, analysis.PreparedDeps(l)); err != nil {
				return err
			}
			fmt.Fprintln(a.out, analysis.ValidLine(name, l))
			return nil
		},
	}
	setFlag(cmd.Flags())
	return cmd
}
