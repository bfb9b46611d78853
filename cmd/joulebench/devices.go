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
		Long:  telemetry.DevicesHelp,
		Args:  cobra.NoArgs,
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
	failed, err := telemetrySources().ListDevices(ctx, a.out, a.v.GetString("format"), sel, a.v, telemetry.Env{Logf: a.telemetryLogf})
	if err == nil && failed {
		err = &exitError{code: exitFailure, err: errors.New("no GPU to measure"), silent: true}
	}
	return err
}
