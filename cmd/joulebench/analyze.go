package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func (a *app) analyzeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Re-evaluate an archived run from its raw data with a profile",
		Long: `analyze reads a run archive (run.json, power.csv, requests.jsonl, ...)
and evaluates a profile's derived values, metrics and checks over it. By
default it uses the profile archived with the run; --profile names a
built-in profile or a YAML file, so an edited method can be applied to old
runs without re-running anything.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			all, _ := cmd.Flags().GetBool("all")
			return a.analyze(cmd, args[0], a.v.GetString("profile"), sets, a.v.GetString("format"), all)
		},
	}
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	cmd.Flags().String("format", "table", "output format: table, json, csv, markdown")
	cmd.Flags().Bool("all", false, "also show derived values")
	setFlag(cmd.Flags())
	baselineFlags(cmd.Flags())
	return cmd
}

// loadProfile resolves and loads a profile, turning its errors into invalid
// input.
func (a *app) loadProfile(src []byte, name string, sets []string) (*workflow.Loaded, error) {
	overrides, err := parseSets(sets)
	if err != nil {
		return nil, err
	}
	l, err := workflow.Load(src, name, workflow.Options{Registry: steps.Registry(), Overrides: overrides, Lookup: a.finder().Find})
	if err != nil {
		return nil, withCode(exitInvalid, fmt.Errorf("invalid profile:\n%w", err))
	}
	return l, nil
}

func (a *app) analyze(cmd *cobra.Command, dir, profile string, sets []string, format string, all bool) error {
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	if base := a.v.GetString("baseline"); base != "" {
		run, l, _, _, err := a.evaluateArchiveLoaded(cmd.Context(), dir, profile, sets)
		if err != nil {
			return err
		}
		return a.gateRun(cmd.Context(), l, run, base, format, all)
	}
	run, res, evalErr, err := a.evaluateArchive(cmd.Context(), dir, profile, sets)
	if err != nil {
		return err
	}
	if err := report.Results(a.out, report.Run{Meta: run.Meta, Results: res}, format, all); err != nil {
		return err
	}
	if evalErr != nil {
		return withCode(exitEval, fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, evalErr))
	}
	return checksOutcome(res)
}

// evaluateArchive loads a run archive and evaluates a profile over it: the
// named profile, or by default the run's own archived profile with the
// parameters it ran with. sets apply on top. err is a failure to load or
// start; evalErr joins the formulas that failed on this run's data.
func (a *app) evaluateArchive(ctx context.Context, dir, profile string, sets []string) (run *archive.Run, res *archive.Results, evalErr, err error) {
	run, _, res, evalErr, err = a.evaluateArchiveLoaded(ctx, dir, profile, sets)
	return run, res, evalErr, err
}

// evaluateArchiveLoaded is evaluateArchive that also returns the loaded
// profile (report needs its stage_energy rows).
func (a *app) evaluateArchiveLoaded(ctx context.Context, dir, profile string, sets []string) (run *archive.Run, l *workflow.Loaded, res *archive.Results, evalErr, err error) {
	run, err = archive.Load(dir)
	if err != nil {
		return nil, nil, nil, nil, withCode(exitInvalid, err)
	}
	var src []byte
	var name string
	if profile != "" {
		src, name, err = a.readProfile(profile)
	} else {
		src, name, err = workflow.ProfileForRun(dir, run.Meta)
		sets = append(runParamSets(run.Meta), sets...)
	}
	if err != nil {
		return nil, nil, nil, nil, withCode(exitInvalid, err)
	}
	l, err = a.loadProfile(src, name, sets)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	res, evalErr = workflow.Evaluate(ctx, l, run)
	if res == nil {
		return nil, nil, nil, nil, withCode(exitInvalid, evalErr)
	}
	return run, l, res, evalErr, nil
}

// checksOutcome returns an exit error when a check of severity fail or
// exclude did not pass.
func checksOutcome(res *archive.Results) error {
	var failed []error
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind == "check" && r.Passed != nil && !*r.Passed && (r.Severity == "fail" || r.Severity == "exclude") {
			failed = append(failed, fmt.Errorf("check %s (%s) failed: %s", n, r.Severity, r.Message))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return withCode(exitChecks, errors.Join(failed...))
}

// runParamSets returns the parameters a run resolved (run.json) as --set
// values, so that its own profile is re-evaluated exactly as it ran.
func runParamSets(m archive.Meta) []string {
	keys := make([]string, 0, len(m.Parameters))
	for k := range m.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := m.Parameters[k].(type) {
		case float64:
			out = append(out, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		default:
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return out
}
