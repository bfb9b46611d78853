package sim

import (
	"context"
	"math"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/clocksync"
	"github.com/joulebench/joulebench/telemetry"
)

// runClockLoad is a load that turns busy (a full batch) at run-clock time
// busyAt: what a node's GPUs see of an engine part there.
type runClockLoad struct {
	clock  func() float64
	busyAt float64
}

func (l runClockLoad) Activity() Activity {
	a := Activity{Phase: PhaseReady, Slots: 4}
	if l.clock() >= l.busyAt {
		a.Running = 4
	}
	return a
}

func twoNodes(run func() float64, decodeOffsetS float64) []Node {
	cfg := func(host, role string, base int) Config {
		c := DefaultConfig()
		c.NoiseW, c.RiseTauS, c.DecayTauS = 0, 0, 0 // instant steps: the change is one sample
		c.Host, c.Role, c.IDBase = host, role, base
		return c
	}
	return []Node{
		{Config: cfg("sim-node-0", record.RolePrefill, 0), Load: runClockLoad{run, math.Inf(1)}},
		{Config: cfg("sim-node-1", record.RoleDecode, 2), Load: runClockLoad{run, 1010}, OffsetS: decodeOffsetS},
	}
}

// TestNodesPlaceSamplesOnRunClock: the decode node's clock is 0.75 s
// ahead; its load turns busy at run time 1010.0. Read every 0.25 s, its
// own model changes power at the read after the one that saw the load
// (zero-order hold): node time 1010.25 + 0.75 = 1011.0. Mapped with the
// measured offset (exact here: the manual clock does not move during a
// probe, so the round trip is 0), that sample is at run time 1010.25, the
// first sample after the switch; unmapped it would be at 1011.0, three
// samples late.
func TestNodesPlaceSamplesOnRunClock(t *testing.T) {
	m := &manual{t: 1000}
	n := NewNodes(twoNodes(m.clock, 0.75), m.clock, clocksyncOpts())
	ctx := context.Background()
	if _, err := n.Read(ctx); err == nil {
		t.Fatal("a read before the clocks were measured should fail")
	}
	cs, err := n.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[1].Host != "sim-node-1" || cs[1].StartOffsetS != 0.75 || cs[1].StartRTTS != 0 || cs[0].StartOffsetS != 0 {
		t.Fatalf("clock sync = %+v, want node 1 at +0.75 s, node 0 at 0, round trips 0", cs)
	}
	devs, err := n.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, host, role string }{
		{"sim0", "sim-node-0", "prefill"}, {"sim1", "sim-node-0", "prefill"},
		{"sim2", "sim-node-1", "decode"}, {"sim3", "sim-node-1", "decode"},
	}
	for i, w := range want {
		if d := devs[i]; d.ID != w.id || d.Host != w.host || d.Role != w.role || !d.Simulated {
			t.Errorf("device %d = %+v, want %s on %s as %s", i, d, w.id, w.host, w.role)
		}
	}
	firstHigh := math.NaN()
	for m.t = 1009.0; m.t <= 1011.5; m.t += 0.25 {
		rs, err := n.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.T != m.t {
				t.Fatalf("reading of %s at %v, want the run clock's %v", r.Device, r.T, m.t)
			}
			if r.Device == "sim2" && r.PowerW > 400 && math.IsNaN(firstHigh) {
				firstHigh = r.T
			}
		}
	}
	if firstHigh != 1010.25 {
		t.Errorf("decode node's power rose at run time %v, want 1010.25 (the first sample after the switch at 1010.0)", firstHigh)
	}
	m.t = 1020
	end, err := n.ClockSync(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if end[1].EndOffsetS == nil || *end[1].EndOffsetS != 0.75 || end[1].StartOffsetS != 0.75 {
		t.Errorf("end clock sync = %+v, want start and end +0.75 s", end[1])
	}
	// The end is measured once: a later call, the clock moved on, keeps it.
	m.t = 1030
	again, err := n.ClockSync(ctx, true)
	if err != nil || again[1].EndRTTS == nil || *again[1].EndOffsetS != 0.75 {
		t.Errorf("second call: %+v, %v", again, err)
	}
}

// TestNodesMeasureOffsetOnWallClock: on the wall clock the probes take
// real time; the measured offset is the injected one within half the
// best round trip, which is within clocksync's bound.
func TestNodesMeasureOffsetOnWallClock(t *testing.T) {
	for _, off := range []float64{0.75, -2.5} {
		n := NewNodes(twoNodes(telemetry.WallClock, off), telemetry.WallClock, clocksyncOpts())
		cs, err := n.Sync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := cs[1]
		if math.Abs(c.StartOffsetS-off) > c.StartRTTS/2+1e-6 || c.StartRTTS > 0.05 {
			t.Errorf("offset %v: measured %v with round trip %v", off, c.StartOffsetS, c.StartRTTS)
		}
	}
}

func clocksyncOpts() clocksync.Options { return clocksync.Options{Probes: 4} }
