package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"
)

func (a *app) sweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep CAMPAIGN.yaml",
		Short: "Run a campaign: every configuration of a matrix as its own run, then compare them",
		Long: `sweep expands a campaign file (a profile, a matrix of engines, models,
scenarios, loads, profile parameters and repetitions, with exclusions) into
runs with stable ids, runs each as an ordinary 'joulebench run' (its own
archive under OUT/runs/<id>, cold start), prints progress and ends with the
compare of the campaign's archives. It resumes: a complete configuration is
skipped, an interrupted one run again into a new directory (<id>.try2), a
failed one only with --retry-failed. --executor slurm submits one sbatch
job per run (re-attaching after a restart, scancel on Ctrl-C);
--executor kubernetes makes one Job per run (--image, --kubeconfig, the
campaign's kubernetes section; archives copied back from the pods,
docs/kubernetes.md); --dry-run
prints the plan and runs nothing. A campaign with a search section searches
the load of each combination (kind: sweep or slo), resumable from
OUT/search-state.json, and ends with the frontier drawn in
OUT/frontier.svg. docs/campaigns.md has the details.`,
		Args: cobra.ExactArgs(1),
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
	format := a.v.GetString("format")
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	executors, err := campaign.NewExecutors(append(campaign.BuiltinExecutors(),
		kubeExecutor(a.v.GetString("image"), a.v.GetString("kubeconfig")))...)
	if err != nil {
		return err
	}
	executor, err := executors.Lookup(a.v.GetString("executor"))
	if err != nil {
		return err
	}
	c, plan, err := a.campaignChecker().Open(path)
	if err != nil {
		return err
	}
	if _, err := a.frontierOptions(); err != nil {
		return err
	}
	bin := a.v.GetString("joulebench-bin")
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("sweep: this executable: %w", err)
		}
	}
	if a.v.GetBool("dry-run") {
		return c.DryRunWith(a.out, plan, bin, executor, a.redact)
	}
	rules, err := compare.Builtin()
	if err != nil {
		return err
	}
	opts := campaign.Options{Binary: bin, RetryFailed: a.v.GetBool("retry-failed"), Log: a.errOut, NotApplicable: rules.NotApplicableReason}
	res, err := c.SweepWith(ctx, plan, executor, opts, a.errOut)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", path, err)
	}
	if res.Interrupted {
		return withCode(exitInterrupted, fmt.Errorf("sweep %s interrupted: %s; run sweep again to resume", path, res.Summary))
	}
	if len(res.Complete) > 0 {
		fmt.Fprintf(a.out, "== campaign %s: %d complete runs compared\n", c.Name, len(res.Complete))
		na := append(c.ExcludedCombinations(), res.NotApplicable...)
		if err := a.compare(ctx, res.Complete, "", compare.BuiltinName, nil, format, na...); err != nil {
			return err
		}
	}
	if c.Searching() && len(res.Complete) > 1 {
		if err := a.writeFrontierPlot(ctx, res.Complete, filepath.Join(c.Dir, "frontier.svg")); err != nil {
			// The comparison is out; a figure that cannot be drawn is
			// said, not a failed sweep.
			fmt.Fprintf(a.errOut, "frontier figure: %v\n", err)
		}
	}
	return c.Outcome(path, plan, res)
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
