package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workload"
)

// campaignLoader loads campaign files with their run flags checked as the
// run command parses them, so that `validate` and `sweep` refuse a flag
// every run would refuse (an unknown flag, --telemetry bogus, an engine
// kind that does not exist) before anything runs.
func (a *app) campaignLoader() campaign.Loader {
	return campaign.Loader{CheckArgs: a.checkRunArgs}
}

// campaignChecker checks campaign files with their run flags
// (campaignLoader) and each run's profile and --set values.
func (a *app) campaignChecker() campaign.Checker {
	return campaign.Checker{Loader: a.campaignLoader(), CheckProfile: func(profile string, sets []string) error {
		_, _, err := a.profiles().ReadLoad(profile, sets)
		return err
	}}
}

// checkRunArgs parses one list of `run` flags of a campaign with a fresh
// run command's flag set and checks the values of the flags that take one
// of a fixed set.
func (a *app) checkRunArgs(args []string) error {
	probe := newApp(io.Discard, io.Discard)
	run, _, err := probe.root.Find([]string{"run"})
	if err != nil {
		return err
	}
	// ParseFlags merges the root's persistent flags (--log-level,
	// --config, --profile-path), which a run takes too.
	if err := run.ParseFlags(args); err != nil {
		return err
	}
	f := run.Flags()
	if f.NArg() > 0 {
		return fmt.Errorf("%q is not a flag: a campaign's args are run flags (the profile is the campaign's profile:)", f.Arg(0))
	}
	if f.Changed("telemetry") {
		given, _ := f.GetStringArray("telemetry")
		for _, g := range given {
			for _, v := range strings.FieldsFunc(g, func(r rune) bool { return r == ',' || r == ' ' }) {
				if !slices.Contains(telemetryChoices, v) {
					return fmt.Errorf("--telemetry %q: valid are %s", v, strings.Join(telemetryChoices, ", "))
				}
			}
		}
	}
	if f.Changed("engine") {
		kinds, _ := f.GetStringSlice("engine")
		for _, k := range kinds {
			if _, ok := a.engines.Lookup(k); !ok {
				return fmt.Errorf("--engine %q: valid are %s", k, strings.Join(a.engines.Kinds(), ", "))
			}
		}
	}
	if f.Changed("dataset-format") {
		v, _ := f.GetString("dataset-format")
		if !slices.Contains(workload.Formats, v) {
			return fmt.Errorf("--dataset-format %q: valid are %s", v, strings.Join(workload.Formats, ", "))
		}
	}
	if f.Changed("format") {
		v, _ := f.GetString("format")
		if err := report.CheckFormat(v); err != nil {
			return err
		}
	}
	return nil
}
