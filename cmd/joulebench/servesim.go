package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/engines/sim"
)

// serveSimCmd is `joulebench serve-sim`: the simulated engine alone, as
// the process of an engine pod (engines/sim.Serve).
func (a *app) serveSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "serve-sim",
		Short:   "Serve the simulated engine standalone (the process of an engine pod)",
		Long:    sim.ServeHelp,
		Example: `  joulebench serve-sim --listen :8000 --quick`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serveSim(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.String("listen", "", "address to serve on, HOST:PORT (required: e.g. :8000 in a pod)")
	f.String("model", "", "model id served (default: the simulator's; it always contains \"sim\")")
	f.String(sim.FlagPreset, "", "simulator behaviour for tests (as run's --sim-preset)")
	f.String(sim.FlagGPU, "", "the GPU the simulator models (as run's --sim-gpu; joulebench devices --sim)")
	f.String(sim.FlagModel, "", "the model the simulator serves on it (as run's --sim-model)")
	f.Int64("seed", 0, "seed of the simulated engine")
	f.Bool("quick", false, "run faster than real time (as a run's quick mode)")
	f.Duration("grace", 0, "bound on the stopping delay after SIGTERM (0: the whole delay)")
	return cmd
}

func (a *app) serveSim(ctx context.Context) error {
	return sim.Serve(ctx, sim.ServeOptions{
		Listen: a.v.GetString("listen"), Model: a.v.GetString("model"), Preset: a.v.GetString(sim.FlagPreset),
		GPU: a.v.GetString(sim.FlagGPU), HWModel: a.v.GetString(sim.FlagModel),
		Seed: a.v.GetInt64("seed"), Quick: a.v.GetBool("quick"), Log: a.errOut, Grace: a.v.GetDuration("grace"),
	})
}
