package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/telemetry"
)

// RunConfig is what `joulebench agent` was given.
type RunConfig struct {
	// Listen is HOST:PORT (required); TokenFile the per-run token's file
	// (required, mode 600); Host the node's name in the run's archive
	// (empty: the hostname); Interval the sampling interval.
	Listen, TokenFile, Host string
	Interval                time.Duration
	// Selected reports whether the agent source itself was chosen (an
	// agent serves its own node's source, never other agents).
	SelectsAgent bool
	// Open opens this node's power source.
	Open func(ctx context.Context) (telemetry.Source, record.TelemetryInfo, error)
	// Infof and Warnf log (nil: discarded).
	Infof, Warnf func(msg string, kv ...string)
}

// Run serves this node's power samples until ctx ends: the checks of the
// command's flags (exit code Invalid), the source opened, the server on
// Listen.
func Run(ctx context.Context, c RunConfig) error {
	infof, warnf := c.Infof, c.Warnf
	if infof == nil {
		infof = func(string, ...string) {}
	}
	if warnf == nil {
		warnf = func(string, ...string) {}
	}
	listen := strings.TrimSpace(c.Listen)
	if listen == "" {
		return exitcode.Invalidf("agent: --listen is required: the address to serve on, e.g. --listen 10.0.0.5:7070")
	}
	tokenFile := strings.TrimSpace(c.TokenFile)
	if tokenFile == "" {
		return exitcode.Invalidf("agent: --token-file is required: a file (mode 600) holding the per-run token")
	}
	token, err := ReadTokenFile(tokenFile)
	if err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("agent: %w", err))
	}
	if c.Interval <= 0 {
		return exitcode.Invalidf("agent: --interval %s: want a positive duration", c.Interval)
	}
	if c.SelectsAgent {
		return exitcode.Invalidf("agent: --telemetry agent reads other agents; an agent serves this node's own source (nvml, dcgm, rapl, ...)")
	}
	host := strings.TrimSpace(c.Host)
	if host == "" {
		if host, err = os.Hostname(); err != nil || host == "" {
			return exitcode.Invalidf("agent: no hostname (%v): give --host NAME", err)
		}
	}
	src, info, err := c.Open(ctx)
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("agent: %w", err))
	}
	if src == nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("agent: no power source on this node: %s", info.Note))
	}
	defer src.Close()
	srv, err := NewServer(ctx, ServerConfig{Source: src, Host: host, Token: token, Interval: c.Interval,
		Clock: telemetry.WallClock, Logf: func(s string) { warnf(s) }})
	if err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	ln, err := Listen(listen)
	if err != nil {
		return exitcode.With(exitcode.Invalid, err)
	}
	infof("serving power samples (Ctrl-C or SIGTERM stops)", "listen", ln.Addr().String(), "host", host, "telemetry", src.Name())
	if err := Serve(ctx, ln, srv.Handler()); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("agent: %w", err))
	}
	infof("stopped")
	return nil
}
