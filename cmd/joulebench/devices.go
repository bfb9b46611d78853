package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/telemetry"
)

// devicesCmd is `joulebench devices`: the GPUs a run would measure and what
// each can measure, or why there are none.
func (a *app) devicesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs a run would measure and what each can measure",
		Long: `devices opens the power source that --telemetry chooses (auto: NVML when an
NVIDIA GPU is there, powermetrics on macOS, the endpoints of --dcgm-url) and
lists its devices: name, UUID, whether energy comes from the device's
cumulative counter or is integrated from power samples, which power field is
read, and whether memory use is known. With no source it says why.

With --sim it lists the simulator's hardware presets instead (--sim-gpu,
--sim-model): each GPU's and model's constants, their sources, and what a
steady load gives on the model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.v.GetBool("sim") {
				return report.RenderSimPresets(a.out, a.v.GetString("format"))
			}
			return a.devices(cmd.Context())
		},
	}
	f := cmd.Flags()
	telemetryFlags(f)
	f.String("format", "table", "output: table or json (with --sim also markdown and csv)")
	f.Bool("sim", false, "list the simulator's hardware presets (--sim-gpu, --sim-model) with their constants and sources")
	return cmd
}

func (a *app) devices(ctx context.Context) error {
	sel, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	failed, err := telemetrySources().ListDevices(ctx, a.out, a.v.GetString("format"), sel, a.v, telemetry.Env{Logf: a.telemetryLogf})
	if err == nil && failed {
		err = &exitError{code: exitFailure, err: errors.New("no GPU to measure"), silent: true}
	}
	return err
}
