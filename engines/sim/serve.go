package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// ServeOptions configure Serve: the simulated engine standalone, as the
// process of an engine pod (joulebench serve-sim).
type ServeOptions struct {
	// Listen is the address to listen on (HOST:PORT; ":8000" in a pod).
	Listen string
	// Model, Preset, Seed and Quick are as a run's --model, --sim-preset,
	// --seed and quick mode.
	Model, Preset string
	// GPU and HWModel are --sim-gpu and --sim-model: the hardware model.
	GPU, HWModel string
	Seed         int64
	Quick        bool
	// Log receives the engine's log lines (nil: discarded).
	Log io.Writer
	// Grace bounds the stopping delay once ctx is done (0: the whole
	// delay).
	Grace time.Duration
}

// Serve runs the simulated engine (its OpenAI API, /health, /metrics
// with the activity its GPUs follow, telemetry/sim.Remote) at
// o.Listen until ctx is done (SIGTERM), then stops it as a run stops the
// simulator: requests aborted, the stopping delay, the server closed. It
// returns nil after that stop, or why the engine could not start or
// exited on its own.
func Serve(ctx context.Context, o ServeOptions) error {
	o.Listen = strings.TrimSpace(o.Listen)
	if o.Listen == "" {
		return exitcode.Invalidf("serve-sim: --listen is required: the address to serve on, e.g. --listen :8000")
	}
	if o.Grace < 0 {
		return exitcode.Invalidf("serve-sim: --grace %s: want 0 or a positive duration", o.Grace)
	}
	built, err := newEngine(engines.Options{Common: engines.Common{Model: o.Model, Seed: o.Seed, Log: o.Log},
		Settings: engines.Settings{FlagPreset: o.Preset, FlagGPU: o.GPU, FlagModel: o.HWModel}, Quick: o.Quick})
	if err != nil {
		return fmt.Errorf("serve-sim: %w", err)
	}
	e, ok := built.(*Engine)
	if !ok {
		return fmt.Errorf("serve-sim: --%s %s: a deployment of several engines cannot be served as one", FlagPreset, o.Preset)
	}
	e.cfg.Listen = o.Listen
	if err := e.Start(context.Background()); err != nil {
		return fmt.Errorf("serve-sim: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-e.Exited():
		return fmt.Errorf("serve-sim: engine exited: %w", e.ExitErr())
	}
	if _, err := e.Stop(context.Background(), o.Grace); err != nil {
		return fmt.Errorf("serve-sim: stop: %w", err)
	}
	return nil
}

// IdentityAt asks a simulated engine's server at base (serve-sim in a
// pod) for its identity, as Engine.Identity does.
func IdentityAt(ctx context.Context, hc *http.Client, base string) (engines.Identity, error) {
	return identityAt(ctx, hc, base)
}

// ModelName is the model id the simulator serves when asked for model
// ("" = its default): it always contains "sim".
func ModelName(model string) string { return Config{Model: model}.normalize().Model }
