package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/campaign/executors"
	"github.com/joulebench/joulebench/compare"
)

func (a *app) sweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep CAMPAIGN.yaml",
		Short: "Run a campaign: every configuration of a matrix as its own run, then compare them",
		Long:  campaign.SweepHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.sweep(cmd.Context(), args[0])
		},
	}
	f := cmd.Flags()
	f.Bool("dry-run", false, "print the expanded plan (run ids, axis values, command lines) and run nothing")
	f.String("executor", "local", "where runs run: local (one after the other on this machine), slurm (one sbatch job each) or kubernetes (one Job each)")
	f.String("image", campaign.DefaultKubeImage, "joulebench image of the runs' pods (--executor kubernetes)")
	f.String("kubeconfig", "", "kubeconfig file of the cluster (--executor kubernetes; default: KUBECONFIG, the in-cluster configuration, ~/.kube/config)")
	f.Bool("retry-failed", false, "run again the configurations whose latest run failed (into a new directory)")
	f.String("joulebench-bin", "", "joulebench executable each run is (default: this one)")
	f.String("format", "table", "format of the final comparison: "+formatList())
	frontierFlags(cmd)
	cmd.Flags().Bool("wide", false, "draw the final comparison's tables at their full width (default: fitted to the terminal, 120 columns off one)")
	return cmd
}

func (a *app) sweep(ctx context.Context, path string) error {
	return campaign.SweepCommand{
		Path: path, Format: a.v.GetString("format"), Executor: a.v.GetString("executor"),
		Executors: executors.All(a.v.GetString("image"), a.v.GetString("kubeconfig")),
		Binary:    a.v.GetString("joulebench-bin"), DryRun: a.v.GetBool("dry-run"), RetryFailed: a.v.GetBool("retry-failed"),
		Checker: a.campaignChecker(), Out: a.out, Log: a.errOut, Redact: a.redact,
		CheckCompare: func() error { _, err := a.frontierOptions(); return err },
		Compare: func(ctx context.Context, dirs []string, na []compare.NotApplicable) error {
			return a.compare(ctx, dirs, "", compare.BuiltinName, nil, a.v.GetString("format"), na...)
		},
		Frontier: a.writeFrontierPlot,
	}.Run(ctx)
}

// validateCampaign validates path when it is a campaign file (ok true),
// with every run's profile and --set values.
func (a *app) validateCampaign(path string) (bool, error) {
	summary, ok, err := a.campaignChecker().Validate(path)
	if ok && err == nil {
		fmt.Fprintln(a.out, summary)
	}
	return ok, err
}
