package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/cli"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/agent"
)

// agentCmd is `joulebench agent`: this node's power samples served to a
// run on another node (package telemetry/agent).
func (a *app) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Serve this node's power samples to a run on another node",
		Long: `agent opens this node's power source (--telemetry, as run takes it: NVML,
DCGM, RAPL, ...) and serves its samples over HTTP to a run on another node
(joulebench run --telemetry agent --agent http://THIS-NODE:PORT). It carries
samples only: its clock, its devices and a stream of readings stamped with
its clock, which the run places on its own clock by measuring the offset.

--listen is required (there is no default address) and --token-file names a
file holding the per-run token (mode 600); every request must carry it as a
bearer token. Ctrl-C or SIGTERM stops the agent.`,
		Example: `  umask 077; openssl rand -hex 32 > run.token   # one token per run, shared with the run's node
  joulebench agent --listen 10.0.0.5:7070 --token-file run.token --telemetry nvml`,
		Args: cobra.NoArgs,
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
	return cmd
}

func (a *app) agent(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sel, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	log := a.log.With().Str("component", "agent").Logger()
	return agent.Run(ctx, agent.RunConfig{
		Listen: a.v.GetString("listen"), TokenFile: a.v.GetString("token-file"), Host: a.v.GetString("host"),
		Interval: a.v.GetDuration("interval"), SelectsAgent: sel.Has(agent.Name),
		Open: func(ctx context.Context) (telemetry.Source, record.TelemetryInfo, error) {
			return telemetrySources().Open(ctx, sel, a.v, telemetry.Env{Clock: telemetry.WallClock, Logf: a.telemetryLogf, NoSource: a.warnNoPower})
		},
		Infof: cli.KVLog(log.Info), Warnf: cli.KVLog(log.Warn),
	})
}
