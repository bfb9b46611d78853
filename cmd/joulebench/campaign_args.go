package main

import (
	"io"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// campaignLoader loads campaign files with their run flags checked as the
// run command parses them, so that `validate` and `sweep` refuse a flag
// every run would refuse (an unknown flag, --telemetry bogus, an engine
// kind that does not exist) before anything runs.
func (a *app) campaignLoader() campaign.Loader {
	return campaign.Loader{CheckArgs: a.checkRunArgs, Engines: a.engines}
}

// campaignChecker checks campaign files with their run flags
// (campaignLoader) and each run's profile and --set values.
func (a *app) campaignChecker() campaign.Checker {
	return campaign.Checker{Loader: a.campaignLoader(), CheckProfile: func(profile string, sets []string) error {
		// The GPU settings' --set values are the run's, not the profile's.
		sets, v, _ := gpusettings.SplitSets(sets)
		req, err := gpusettings.ParseRequest(v[0], v[1])
		if err == nil {
			err = req.ParseMemClocks(v[2])
		}
		if err != nil {
			return err
		}
		_, _, err = a.profiles().ReadLoad(profile, sets)
		return err
	}}
}

// checkRunArgs parses one list of `run` flags of a campaign with a fresh
// run command's flag set and checks them (campaign.CheckRunFlags).
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
	return campaign.CheckRunFlags(run.Flags(), a.engines, telemetryChoices)
}
