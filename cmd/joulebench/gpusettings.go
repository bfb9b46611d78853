package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/telemetry/nvml"
)

// gpuOptions adds to the run's GPU settings their journal and
// controller: NVML changes real GPUs; the simulator's GPUs take them in
// the simulator.
func (a *app) gpuOptions(o runner.GPUOptions) runner.GPUOptions {
	js, err := gpusettings.DefaultJournals(os.Getenv)
	if err != nil {
		a.log.Warn().Err(err).Msg("GPU settings journal")
	}
	o.Journals, o.Open = js, nvml.OpenForRun
	return o
}

// restoreCmd applies and clears the GPU settings journal a run left.
func (a *app) restoreCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "restore",
		Short: "Restore the GPU settings a run changed and could not restore (its journal)",
		Long:  gpusettings.RestoreHelp(),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return gpusettings.Restore(a.out, os.Getenv, nvml.OpenSettings)
		},
	}
}
