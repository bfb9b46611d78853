package runner

import (
	"context"
	"github.com/joulebench/joulebench/internal/clocksync"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/syncbuf"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// tinyProfile is the tests' profile: a few short requests (seconds).
const tinyProfile = "testdata/tiny.yaml"

// syncBuffer is a bytes.Buffer safe for the run's goroutines.
type syncBuffer = syncbuf.Buffer

// fakeHost is a host with the state the test gives it.
type fakeHost struct{ swap, procs string }

func (h fakeHost) SwapUsed() string                       { return h.swap }
func (h fakeHost) EngineProcesses([]string, []int) string { return h.procs }

// simTelemetry opens the simulated GPU of the simulated engine (none for
// another engine), as the command line's --telemetry auto does.
func simTelemetry(_ context.Context, env TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
	if env.Sim == nil {
		return nil, record.TelemetryInfo{Source: "none", Note: "no power source in this test"}, nil
	}
	if env.Sim.Nodes != nil { // a deployment's simulated parts: each node's GPUs, their clocks measured
		nodes := simtel.NewNodes(env.Sim.Nodes, env.Clock.Now, clocksync.Options{})
		cs, err := nodes.Sync(context.Background())
		return nodes, record.TelemetryInfo{Source: "sim", Simulated: true, ClockSync: cs}, err
	}
	return simtel.New(env.Sim.Config, env.Sim.Load, env.Clock.Now), record.TelemetryInfo{Source: "sim", Simulated: true}, nil
}

// testSpec is a spec of the tiny profile on the simulator, in the quick
// mode, writing under a temporary directory, with a fake host.
func testSpec(t *testing.T, msgs *syncBuffer) Spec {
	t.Helper()
	return Spec{
		Profile:       tinyProfile,
		Quick:         true,
		Engine:        EngineOptions{Common: engines.Common{Seed: 1}},
		FindProfile:   (&profiles.Finder{}).Find,
		OpenTelemetry: simTelemetry,
		Messages:      msgs,
		Host:          fakeHost{},
	}
}
