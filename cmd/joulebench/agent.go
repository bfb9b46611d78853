package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

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
	listen := strings.TrimSpace(a.v.GetString("listen"))
	if listen == "" {
		return invalidf("agent: --listen is required: the address to serve on, e.g. --listen 10.0.0.5:7070")
	}
	tokenFile := strings.TrimSpace(a.v.GetString("token-file"))
	if tokenFile == "" {
		return invalidf("agent: --token-file is required: a file (mode 600) holding the per-run token")
	}
	token, err := agent.ReadTokenFile(tokenFile)
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("agent: %w", err))
	}
	interval := a.v.GetDuration("interval")
	if interval <= 0 {
		return invalidf("agent: --interval %s: want a positive duration", interval)
	}
	sel, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	if sel.Has(agent.Name) {
		return invalidf("agent: --telemetry agent reads other agents; an agent serves this node's own source (nvml, dcgm, rapl, ...)")
	}
	host := strings.TrimSpace(a.v.GetString("host"))
	if host == "" {
		if host, err = os.Hostname(); err != nil || host == "" {
			return invalidf("agent: no hostname (%v): give --host NAME", err)
		}
	}
	src, info, err := telemetrySources().Open(ctx, sel, a.v, telemetry.Env{Clock: telemetry.WallClock, Logf: a.telemetryLogf, NoSource: a.warnNoPower})
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("agent: %w", err))
	}
	if src == nil {
		return withCode(exitFailure, fmt.Errorf("agent: no power source on this node: %s", info.Note))
	}
	defer src.Close()
	log := a.log.With().Str("component", "agent").Logger()
	srv, err := agent.NewServer(ctx, agent.ServerConfig{Source: src, Host: host, Token: token, Interval: interval,
		Clock: telemetry.WallClock, Logf: func(s string) { log.Warn().Msg(s) }})
	if err != nil {
		return withCode(exitFailure, err)
	}
	ln, err := agent.Listen(listen)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	log.Info().Str("listen", ln.Addr().String()).Str("host", host).Str("telemetry", src.Name()).Msg("serving power samples (Ctrl-C or SIGTERM stops)")
	if err := agent.Serve(ctx, ln, srv.Handler()); err != nil {
		return withCode(exitFailure, fmt.Errorf("agent: %w", err))
	}
	log.Info().Msg("stopped")
	return nil
}
