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
	o.Journals = js
	o.Open = func(simulated bool) (gpusettings.Controller, error) {
		if simulated {
			return nil, nil
		}
		return nvml.OpenSettings()
	}
	return o
}

// restoreCmd applies and clears the GPU settings journal a run left.
func (a *app) restoreCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "restore",
		Short: "Restore the GPU settings a run changed and could not restore (its journal)",
		Long: `restore reads the journals that a run with --gpu-power-limit, --gpu-clocks or
--gpu-mem-clocks writes before changing anything, one per GPU
(/var/lib/joulebench/gpu-settings-<GPU UUID>.json; $JOULEBENCH_STATE_DIR when
set; $XDG_STATE_HOME/joulebench when /var/lib/joulebench cannot be written),
and puts every GPU's previous power limit back and unlocks its clocks. A run
killed outright (SIGKILL, a power loss) leaves its journals; no run starts
while one is there. A GPU no longer present is reported and kept in its
journal. See docs/power.md, "GPU settings: the restore journal".`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return gpusettings.Restore(a.out, os.Getenv, nvml.OpenSettings)
		},
	}
}
