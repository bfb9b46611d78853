package agent

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/joulebench/joulebench/telemetry"
)

// driftClock is an agent's clock drifting steadily from the wall clock
// (the run clock here): at wall time w it reads w + rate × (w − t0).
type driftClock struct{ t0, rate float64 }

func (c driftClock) now() float64 {
	w := telemetry.WallClock()
	return w + c.rate*(w-c.t0)
}

// wall is the wall time at which the clock read x: x = w + rate (w − t0).
func (c driftClock) wall(x float64) float64 { return (x + c.rate*c.t0) / (1 + c.rate) }

// An agent whose clock drifts linearly, +0 s at the start and about
// +0.2 s a second later (0.2 s per s, far beyond any real clock, so that
// the start offset alone is plainly wrong): streamed, its samples sit up
// to 0.2 s from where they belong; once the end offset is measured,
// RePlace puts each one at the run time the agent read it, within half
// the round trips of the two measurements (the run clock is the wall
// clock, so a reading the agent made at its time x belongs at the wall
// time x was read: driftClock.wall).
func TestDriftingClockPlacedAgain(t *testing.T) {
	dc := driftClock{t0: telemetry.WallClock(), rate: 0.2}
	url, src, _ := startAgentClock(t, "node1", dc.now)
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken, Clock: telemetry.WallClock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []telemetry.Reading
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		rs, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
		time.Sleep(20 * time.Millisecond)
	}
	cs, err := s.ClockSync(context.Background(), true)
	if err != nil || cs[0].EndOffsetS == nil {
		t.Fatalf("end: %+v, %v", cs, err)
	}
	bound := (cs[0].StartRTTS+*cs[0].EndRTTS)/2 + 1e-6
	if drift := *cs[0].EndOffsetS - cs[0].StartOffsetS; drift < 0.15 {
		t.Fatalf("drift %.6f s over the test, want about 0.2", drift)
	}
	worstStreamed := 0.0
	for _, r := range got {
		x, ok := src.agentTime(r.PowerW)
		if !ok {
			t.Fatalf("reading %+v was never made", r)
		}
		want := dc.wall(x)
		worstStreamed = math.Max(worstStreamed, math.Abs(r.T-want))
		placed, ok := s.RePlace(r.Device, r.T)
		if !ok {
			t.Fatalf("RePlace(%s) refused with the end known", r.Device)
		}
		if d := placed - want; math.Abs(d) > bound {
			t.Errorf("reading made at agent time %.6f (run time %.6f): placed again at %.6f, off by %.6f s (bound %.6f)", x, want, placed, d, bound)
		}
	}
	// The streamed placement (start offset alone) was off by far more.
	if worstStreamed < 0.1 {
		t.Errorf("streamed readings at most %.6f s off: the drift did not show", worstStreamed)
	}
	if _, ok := s.RePlace("node2:gpu0", 1); ok {
		t.Error("RePlace of a device of no agent")
	}
}
