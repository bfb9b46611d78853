package clocksync

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// scripted plays round trips: each is (t0, remote, t1).
type scripted struct {
	trips [][3]float64
	i     int
	half  bool // the next local() call is a trip's t1
}

func (s *scripted) local() float64 {
	tr := s.trips[s.i]
	if !s.half {
		s.half = true
		return tr[0]
	}
	s.half = false
	s.i++
	return tr[2]
}

func (s *scripted) probe(context.Context) (float64, error) { return s.trips[s.i][1], nil }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMeasureKeepsTheShortestRoundTrip(t *testing.T) {
	// By hand:
	// trip 1: t0 100.000, remote 105.030, t1 100.040: RTT 0.040, mid 100.020, offset 5.010
	// trip 2: t0 101.000, remote 106.003, t1 101.004: RTT 0.004, mid 101.002, offset 5.001
	// trip 3: t0 102.000, remote 107.000, t1 102.010: RTT 0.010, mid 102.005, offset 4.995
	// The shortest is trip 2: offset 5.001 ± 0.002 at 101.002.
	s := &scripted{trips: [][3]float64{{100, 105.030, 100.040}, {101, 106.003, 101.004}, {102, 107, 102.010}}}
	e, err := Measure(context.Background(), s.local, s.probe, Options{Probes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !near(e.OffsetS, 5.001) || !near(e.RTTS, 0.004) || !near(e.AtS, 101.002) || e.Probes != 3 || !near(e.UncertaintyS(), 0.002) {
		t.Fatalf("estimate %+v, want offset 5.001 RTT 0.004 at 101.002 of 3 probes", e)
	}
}

func TestMeasureRefusesSlowPathsAndBadReadings(t *testing.T) {
	// Best round trip 0.060 s > the 0.050 s default bound.
	s := &scripted{trips: [][3]float64{{10, 12, 10.060}, {11, 13, 11.080}}}
	_, err := Measure(context.Background(), s.local, s.probe, Options{Probes: 2})
	if !errors.Is(err, ErrRTTTooLong) || !strings.Contains(err.Error(), "0.060 s") {
		t.Fatalf("err %v, want ErrRTTTooLong naming 0.060 s", err)
	}
	nan := &scripted{trips: [][3]float64{{10, math.NaN(), 10.001}}}
	if _, err := Measure(context.Background(), nan.local, nan.probe, Options{Probes: 1}); err == nil || !strings.Contains(err.Error(), "probe 1 of 1") {
		t.Fatalf("NaN reading: err %v", err)
	}
	back := &scripted{trips: [][3]float64{{10, 10, 9.5}}}
	if _, err := Measure(context.Background(), back.local, back.probe, Options{Probes: 1}); err == nil || !strings.Contains(err.Error(), "went back") {
		t.Fatalf("clock going back: err %v", err)
	}
	failing := func(context.Context) (float64, error) { return 0, errors.New("connection refused") }
	if _, err := Measure(context.Background(), func() float64 { return 1 }, failing, Options{Probes: 4}); err == nil || !strings.Contains(err.Error(), "probe 1 of 4: connection refused") {
		t.Fatalf("probe error: err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, func() float64 { return 1 }, failing, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err %v", err)
	}
}

func TestMappingInterpolatesAndBoundsDrift(t *testing.T) {
	// Start: offset 5.000 ± 0.002 at run time 100; end: offset 5.010 ±
	// 0.003 at 200. A remote stamp 155.000 is near run time 150 (155 −
	// 5.000), half way, where the offset is 5.005: run time 149.995.
	start := Estimate{OffsetS: 5.000, RTTS: 0.004, AtS: 100}
	end := Estimate{OffsetS: 5.010, RTTS: 0.006, AtS: 200}
	m := NewMapping(start)
	if got := m.ToRun(155); !near(got, 150) {
		t.Fatalf("before the end is known: %v, want 150 (start offset)", got)
	}
	m = m.WithEnd(end)
	cases := []struct{ remote, want float64 }{
		{155, 149.995},
		{50, 45},        // before the start: the start's offset
		{305.01, 300},   // after the end: the end's offset
		{130, 124.9975}, // run ≈ 125: offset 5.0025
	}
	for _, c := range cases {
		if got := m.ToRun(c.remote); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("ToRun(%v) = %.9f, want %.9f", c.remote, got, c.want)
		}
	}
	if !near(m.DriftS(), 0.010) {
		t.Fatalf("drift %v, want 0.010", m.DriftS())
	}
	// Drift 0.010; slack 0.002 + 0.003 = 0.005. Bound 0.004: 0.009 < 0.010 fails;
	// bound 0.006: 0.011 >= 0.010 passes.
	if err := m.CheckDrift(0.004); err == nil || !strings.Contains(err.Error(), "drifted 0.010000 s") {
		t.Fatalf("CheckDrift(0.004) = %v, want a drift error", err)
	}
	if err := m.CheckDrift(0.006); err != nil {
		t.Fatalf("CheckDrift(0.006) = %v", err)
	}
}

// A clock drifting fast and steadily: offset 0 at run time 100, 0.2 s at
// 102 (0.1 s per s). The reading it made at run time 101 carries 101 +
// 0.1 = 101.1; mapped, it lands at 101 exactly (the old approximation,
// the offset taken at 101.1 − 0 = 101.1, gave 101.1 − 0.11 = 100.99, 10 ms
// off). Streamed with the start offset it was placed at 101.1; RePlace
// places it at 101. Outside the span the nearer estimate's offset holds:
// 99.5 read 99.5 (before the start), 103.2 read 103 (after the end).
func TestMappingInvertsASteadyDrift(t *testing.T) {
	m := NewMapping(Estimate{OffsetS: 0, RTTS: 0.001, AtS: 100})
	if got := m.RePlace(101.1); got != 101.1 {
		t.Fatalf("RePlace before the end is known: %v, want 101.1 unchanged", got)
	}
	m = m.WithEnd(Estimate{OffsetS: 0.2, RTTS: 0.001, AtS: 102})
	for _, c := range []struct{ remote, want float64 }{
		{101.1, 101},
		{100.55, 100.5}, // run 100.5: offset 0.05
		{101.925, 101.75},
		{99.5, 99.5},
		{103.2, 103},
	} {
		if got := m.ToRun(c.remote); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("ToRun(%v) = %.9f, want %.9f", c.remote, got, c.want)
		}
	}
	if got := m.RePlace(101.1); math.Abs(got-101) > 1e-9 {
		t.Errorf("RePlace(101.1) = %.9f, want 101", got)
	}
	// With an offset at the start: offset 5 at 100, 5.2 at 102. The stamp
	// 106.1 (run 101, offset 5.1) was streamed at 106.1 − 5 = 101.1.
	m = NewMapping(Estimate{OffsetS: 5, AtS: 100}).WithEnd(Estimate{OffsetS: 5.2, AtS: 102})
	if got := m.RePlace(101.1); math.Abs(got-101) > 1e-9 {
		t.Errorf("RePlace(101.1) with a start offset = %.9f, want 101", got)
	}
}
