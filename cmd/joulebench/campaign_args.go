package main

import (
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/runner/runflags"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// campaignLoader loads campaign files with their run flags checked as the
// run command parses them, so that `validate` and `sweep` refuse a flag
// every run would refuse (an unknown flag, --telemetry bogus, an engine
// kind that does not exist) before anything runs, and builds each run's
// settings as the run command builds its own (campaignSettings).
func (a *app) campaignLoader() campaign.Loader {
	return campaign.Loader{CheckArgs: a.checkRunArgs, Engines: a.engines, Settings: a.campaignSettings}
}

// campaignChecker checks campaign files with their run flags
// (campaignLoader) and each run's profile and --set values.
func (a *app) campaignChecker() campaign.Checker {
	return campaign.Checker{Loader: a.campaignLoader(), CheckProfile: func(profile string, sets []string) error {
		// The GPU settings' --set values are the run's, not the profile's.
		sets, err := gpusettings.CheckSets(sets)
		if err != nil {
			return err
		}
		_, _, err = a.profiles().ReadLoad(profile, sets)
		return err
	}}
}

// parseRunArgs parses one list of `run` flags of a campaign as the run
// command parses its own (runflags.ParseArgs) and checks them
// (campaign.CheckRunFlags).
func (a *app) parseRunArgs(args []string) (*pflag.FlagSet, error) {
	f, err := runflags.ParseArgs(args, a.runRegistries(), specFlag)
	if err != nil {
		return nil, err
	}
	return f, campaign.CheckRunFlags(f, a.engines, telemetryChoices)
}

// checkRunArgs checks one list of `run` flags of a campaign
// (parseRunArgs).
func (a *app) checkRunArgs(args []string) error {
	_, err := a.parseRunArgs(args)
	return err
}

// campaignSettings are the settings of a campaign's run of profile with
// the run flags args, built as `joulebench run profile args...` builds its
// own: the flags over the configuration file and the environment.
func (a *app) campaignSettings(profile string, args []string) (runflags.Settings, error) {
	f, err := a.parseRunArgs(args)
	if err != nil {
		return runflags.Settings{}, err
	}
	probe := &app{v: viper.New()} // the configuration as a fresh process reads it
	if err := probe.readConfig(f); err != nil {
		return runflags.Settings{}, err
	}
	return runflags.Build(profile, f, probe.v, a.runRegistries()), nil
}
