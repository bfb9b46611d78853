package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/internal/cli"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/agent"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// agentCmd is `joulebench agent`: this node's power samples served to a
// run on another node (package telemetry/agent).
func (a *app) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agent",
		Short:   "Serve this node's power samples to a run on another node",
		Long:    agent.Help,
		Example: agent.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.agent(cmd.Context())
		},
	}
	f := cmd.Flags()
	telemetryFlags(f)
	f.String("listen", "", "address to serve on, HOST:PORT (required, no default: e.g. the node's address on the cluster network)")
	f.String("token-file", "", "file holding the per-run token the run must send (required; mode 600)")
	f.String("host", "", "name of this node in the run's archive (default: the hostname)")
	f.Duration("interval", agent.DefaultInterval, "sampling interval of the power source")
	f.String("sim-engine-url", "", "--telemetry sim: the simulated engine on this node (joulebench serve-sim) whose load the simulated GPUs follow")
	f.String(sim.FlagGPU, "", "--telemetry sim: the GPU the simulated GPUs model (joulebench devices --sim)")
	f.String(sim.FlagModel, "", "--telemetry sim: the model the simulated engine serves on them")
	return cmd
}

func (a *app) agent(ctx context.Context) error {
	sel, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	log := a.log.With().Str("component", "agent").Logger()
	var simGPUs func(telemetry.Clock) telemetry.Source
	if sel.Has(simtel.Name) {
		if simGPUs, err = sim.AgentGPUs(ctx, a.v.GetString(sim.FlagGPU), a.v.GetString(sim.FlagModel), a.v.GetString("sim-engine-url")); err != nil {
			return &exitError{code: exitInvalid, err: fmt.Errorf("agent: %w", err)}
		}
	}
	return agent.Run(ctx, agent.RunConfig{
		Listen: a.v.GetString("listen"), TokenFile: a.v.GetString("token-file"), Host: a.v.GetString("host"),
		Interval: a.v.GetDuration("interval"), SelectsAgent: sel.Has(agent.Name),
		Open: func(ctx context.Context) (telemetry.Source, record.TelemetryInfo, error) {
			return telemetrySources().Open(ctx, sel, a.v, telemetry.Env{Clock: telemetry.WallClock, Logf: a.telemetryLogf, NoSource: a.warnNoPower, SimulatedGPUs: simGPUs})
		},
		Infof: cli.KVLog(log.Info), Warnf: cli.KVLog(log.Warn),
	})
}
