package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/report"
)

func (a *app) sweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep CAMPAIGN.yaml",
		Short: "Run a campaign: every configuration of a matrix as its own run, then compare them",
		Long: `sweep expands a campaign file (a profile, a matrix of engines, models,
scenarios, loads, profile parameters and repetitions, with exclusions) into
runs with stable ids, and runs each as an ordinary 'joulebench run': its own
archive under OUT/runs/<id>, cold start, its own power monitor. It prints
progress over the whole campaign and ends with the compare of the
campaign's archives.

It is resumable: a configuration with a complete archive is skipped, an
interrupted one is run again, a failed one only with --retry-failed; a run
that is run again goes to a new directory (<id>.try2, ...).

--executor slurm submits one sbatch job per run instead (exclusive node,
GPUs from the run's tensor parallelism; partition, time limit and options
from the campaign's slurm section), follows them with squeue/sacct,
re-attaches to its jobs after a restart (OUT/slurm-state.json) and cancels
them with scancel on Ctrl-C. --dry-run prints the plan and runs nothing.

A campaign with a search section has no load axis: for each combination
of the other axes it searches the load. kind: sweep runs concurrency 1,
then unlimited, then rates spaced between the two measured request rates,
and stops climbing at the first over-saturated point; kind: slo bisects
concurrency or rate for the highest load whose SLO attainment reaches the
target. Each point is a full run with its own archive; each decision is
logged and kept in OUT/search-state.json, so a search resumes after
Ctrl-C, locally or with --executor slurm. The sweep ends with the
comparison, its energy–latency frontier, and the frontier drawn in
OUT/frontier.svg.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.sweep(cmd.Context(), args[0])
		},
	}
	f := cmd.Flags()
	f.Bool("dry-run", false, "print the expanded plan (run ids, axis values, command lines) and run nothing")
	f.String("executor", "local", "where runs run: local (one after the other on this machine) or slurm (one sbatch job each)")
	f.Bool("retry-failed", false, "run again the configurations whose latest run failed (into a new directory)")
	f.String("joulebench-bin", "", "joulebench executable each run is (default: this one)")
	f.String("format", "table", "format of the final comparison: table, json, csv, markdown")
	frontierFlags(cmd)
	return cmd
}

func (a *app) sweep(ctx context.Context, path string) error {
	format := a.v.GetString("format")
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	executor := a.v.GetString("executor")
	if executor != "local" && executor != "slurm" {
		return invalidf("--executor %q: valid are local, slurm", executor)
	}
	c, err := a.campaignLoader().ReadFile(path)
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("invalid campaign:\n%w", err))
	}
	plan := c.Expand()
	if len(plan.Runs) == 0 {
		return invalidf("campaign %s: every combination is excluded: nothing to run", path)
	}
	// Every run's profile and --set values are checked before anything
	// starts.
	if err := a.checkPlanProfiles(checkedPlan(c, plan)); err != nil {
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
		if c.Searching() {
			fmt.Fprintf(a.out, "campaign %s: %s search over %d combinations; the first points of each follow (the next ones depend on what they measure)\n", c.Name, c.Search.Kind, len(plan.Runs))
			plan = searchFirstPoints(c, plan)
		}
		return a.printPlan(c, plan, bin, executor)
	}
	rules, err := compare.Builtin()
	if err != nil {
		return err
	}
	opts := campaign.Options{Binary: bin, RetryFailed: a.v.GetBool("retry-failed"), Log: a.errOut, NotApplicable: rules.NotApplicableReason}
	exec := func(ctx context.Context, p campaign.Plan) (campaign.Result, error) {
		if executor == "slurm" {
			return c.RunSlurm(ctx, p, opts, campaign.ExecCommander)
		}
		return c.RunLocal(ctx, p, opts)
	}
	var res campaign.Result
	if c.Searching() {
		fmt.Fprintf(a.errOut, "campaign %s: %s search over %d combinations (%d excluded), executor %s, archives in %s\n", c.Name, c.Search.Kind, len(plan.Runs), plan.Excluded, executor, c.RunsDir())
		res, _, err = c.RunSearch(ctx, plan, opts, exec)
	} else {
		fmt.Fprintf(a.errOut, "campaign %s: %d runs (%d excluded), executor %s, archives in %s\n", c.Name, len(plan.Runs), plan.Excluded, executor, c.RunsDir())
		res, err = exec(ctx, plan)
	}
	if err != nil {
		return fmt.Errorf("sweep %s: %w", path, err)
	}
	fmt.Fprintf(a.errOut, "campaign %s: %s\n", c.Name, res.Summary)
	for _, f := range res.Failed {
		fmt.Fprintf(a.errOut, "failed: %s\n", f)
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
	// A search's failed point is one of its outcomes (an overloaded
	// server), said above, not a failed sweep.
	if len(res.Failed) > 0 && !c.Searching() {
		return withCode(exitFailure, fmt.Errorf("sweep %s: %d of %d runs failed (--retry-failed runs them again)", path, len(res.Failed), len(plan.Runs)))
	}
	if res.Summary.Left > 0 && !c.Searching() {
		return withCode(exitFailure, fmt.Errorf("sweep %s: %d runs have no complete archive", path, res.Summary.Left))
	}
	return nil
}

// checkPlanProfiles loads each distinct (profile, --set) of the plan the
// way run will, so that an unknown parameter or a bad value is reported
// before the first run starts.
func (a *app) checkPlanProfiles(plan campaign.Plan) error {
	seen := map[string]bool{}
	for _, r := range plan.Runs {
		sets := setsOf(r.Config.Args)
		key := r.Config.Profile + "\x00" + strings.Join(sets, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		src, name, err := a.readProfile(r.Config.Profile)
		if err != nil {
			return withCode(exitInvalid, fmt.Errorf("run %s: %w", r.ID, err))
		}
		if _, err := a.loadProfile(src, name, sets); err != nil {
			return withCode(exitInvalid, fmt.Errorf("run %s: %w", r.ID, err))
		}
	}
	return nil
}

// checkedPlan is the plan whose profiles are checked: a search's points
// (the synchronous, throughput and one rate point of each combination,
// or its slo bounds) for a campaign with a search section.
func checkedPlan(c *campaign.Campaign, plan campaign.Plan) campaign.Plan {
	if !c.Searching() {
		return plan
	}
	loads := []campaign.LoadPoint{{Mode: "concurrency", Concurrency: 1}, {Mode: "unlimited"}, {Mode: c.Search.RateMode, Rate: 1}}
	if c.Search.Kind == campaign.SearchSLO && c.Search.Over == "concurrency" {
		loads = []campaign.LoadPoint{{Mode: "concurrency", Concurrency: int(c.Search.Low)}, {Mode: "concurrency", Concurrency: int(c.Search.High)}}
	}
	var out campaign.Plan
	for _, r := range plan.Runs {
		for _, l := range loads {
			out.Runs = append(out.Runs, c.PointRun(r, l))
		}
	}
	return out
}

// searchFirstPoints are the points every search of the campaign starts
// with: concurrency 1 and unlimited (sweep), or the low and high bounds
// (slo).
func searchFirstPoints(c *campaign.Campaign, plan campaign.Plan) campaign.Plan {
	loads := []campaign.LoadPoint{{Mode: "concurrency", Concurrency: 1}, {Mode: "unlimited"}}
	if c.Search.Kind == campaign.SearchSLO {
		if c.Search.Over == "rate" {
			loads = []campaign.LoadPoint{{Mode: c.Search.RateMode, Rate: c.Search.Low}, {Mode: c.Search.RateMode, Rate: c.Search.High}}
		} else {
			loads = []campaign.LoadPoint{{Mode: "concurrency", Concurrency: int(c.Search.Low)}, {Mode: "concurrency", Concurrency: int(c.Search.High)}}
		}
	}
	var out campaign.Plan
	for _, r := range plan.Runs {
		for _, l := range loads {
			out.Runs = append(out.Runs, c.PointRun(r, l))
		}
	}
	return out
}

// setsOf returns the --set values of a run's arguments.
func setsOf(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--set" && i+1 < len(args):
			out = append(out, args[i+1])
			i++
		case strings.HasPrefix(args[i], "--set="):
			out = append(out, strings.TrimPrefix(args[i], "--set="))
		}
	}
	return out
}

func (a *app) printPlan(c *campaign.Campaign, plan campaign.Plan, bin, executor string) error {
	fmt.Fprintf(a.out, "campaign %s: %d runs (%d excluded by the exclude list), executor %s\n", c.Name, len(plan.Runs), plan.Excluded, executor)
	for i, r := range plan.Runs {
		as, err := c.Attempts(r)
		if err != nil {
			return err
		}
		st := campaign.Status(as)
		dir, err := c.NextDir(r)
		if err != nil {
			return err
		}
		if last, ok := campaign.Latest(as); ok && st == campaign.Complete {
			dir = last.Dir
		}
		fmt.Fprintf(a.out, "%3d  %s  [%s]  %s\n", i+1, r.ID, st, r.Describe())
		// The plan shows the command lines with the campaign's secrets
		// hidden (its --api-key, the credentials of its URLs), as the runs
		// themselves do; the sbatch files submitted keep them.
		red := a.redact.WithArgv(r.Args(dir))
		shown := r
		shown.Config.Args = red.Argv(r.Config.Args)
		if executor == "slurm" {
			script := red.String(c.JobScript(shown, orDefault(c.Slurm.Joulebench, bin), dir))
			fmt.Fprintf(a.out, "     sbatch script:\n%s", indent(script, "       "))
			continue
		}
		fmt.Fprintf(a.out, "     %s %s\n", bin, strings.Join(quoteArgs(shown.Args(dir)), " "))
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func indent(s, pre string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(pre + l)
		}
	}
	return b.String()
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if s == "" || strings.ContainsAny(s, " \t'\"$\\;&|<>*?()[]{}") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return out
}

// validateCampaign validates path when it is a campaign file (ok true),
// with every run's profile and --set values.
func (a *app) validateCampaign(path string) (bool, error) {
	// A path that is no regular file of a sane size is no campaign: the
	// profile reader then says what is wrong with it.
	src, err := boundedfile.Read(path, "campaign file", boundedfile.MaxProfileBytes)
	if err != nil || !campaign.LooksLikeCampaign(src) {
		return false, nil
	}
	c, err := a.campaignLoader().Load(src, path)
	if err != nil {
		return true, withCode(exitInvalid, fmt.Errorf("invalid campaign:\n%w", err))
	}
	plan := c.Expand()
	if len(plan.Runs) == 0 {
		return true, invalidf("campaign %s: every combination is excluded: nothing to run", path)
	}
	if err := a.checkPlanProfiles(checkedPlan(c, plan)); err != nil {
		return true, err
	}
	fmt.Fprintf(a.out, "%s: campaign %s is valid: %d runs (%d excluded), profile %s\n", path, c.Name, len(plan.Runs), plan.Excluded, c.Profile)
	return true, nil
}
