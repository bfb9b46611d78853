// Package simtest serves the simulated engine for other packages' tests:
// started on a free port, ready, and stopped when the test ends.
package simtest

import (
	"context"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/sim"
)

// Serve starts the simulated engine of cfg, waits until it is ready and
// stops it when t ends. A failure to start is fatal to t.
func Serve(t testing.TB, cfg sim.Config) *sim.Engine {
	t.Helper()
	e := sim.New(cfg)
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatalf("start the simulated engine: %v", err)
	}
	t.Cleanup(func() { _, _ = e.Stop(context.Background(), time.Second) })
	if err := e.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("the simulated engine is not ready: %v", err)
	}
	return e
}
