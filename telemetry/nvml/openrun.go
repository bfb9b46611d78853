package nvml

import "github.com/joulebench/joulebench/telemetry/gpusettings"

// OpenForRun opens a run's GPU settings controller (runner.GPUOptions'
// Open): NVML's for the machine's GPUs; none for the simulator's, which
// the run changes through the simulator's own controller.
func OpenForRun(simulated bool) (gpusettings.Controller, error) {
	if simulated {
		return nil, nil
	}
	return OpenSettings()
}
