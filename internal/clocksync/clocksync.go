// Package clocksync measures the offset between the run clock and another
// clock (a remote node's power clock, a simulated node's) by round trips,
// as NTP does, and maps that clock's timestamps onto the run clock.
//
// One probe is a round trip: the local send time t0, the remote clock's
// reading r, the local receive time t1. If the remote read its clock half
// way, its offset is r − (t0+t1)/2, and whatever asymmetry the path has,
// the true offset lies within ± (t1−t0)/2 of it. Measure keeps the probe
// with the shortest round trip (its bound is the tightest) and refuses an
// estimate whose best round trip exceeds a bound: a clock read over a slow
// path is not known well enough to place power samples.
//
// A source's offset is measured at the start of a run and at its end. The
// samples are streamed during the run, placed with the start offset (the
// end one is not known yet); once the end offset is known, each sample is
// placed again with the offset interpolated linearly in time between the
// two measurements (Mapping.RePlace), so that a clock drifting at a steady
// rate lands within the measurements' uncertainty. A drift between the
// two beyond a bound fails the power audit. Times are Unix seconds as
// float64, as the run clock's.
package clocksync

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Probe reads the other clock once and returns its time (Unix seconds on
// that clock).
type Probe func(ctx context.Context) (float64, error)

// Estimate is one measured offset.
type Estimate struct {
	// OffsetS is the other clock minus the run clock, in seconds: a
	// timestamp t of the other clock is t − OffsetS on the run clock.
	OffsetS float64
	// RTTS is the round trip of the probe the estimate comes from; the
	// offset is known within ± RTTS/2.
	RTTS float64
	// AtS is the run-clock time of that probe's midpoint.
	AtS float64
	// Probes is how many round trips were made.
	Probes int
}

// UncertaintyS is the bound on the estimate's error: half the round trip.
func (e Estimate) UncertaintyS() float64 { return e.RTTS / 2 }

// Options bound a measurement.
type Options struct {
	// Probes is the number of round trips (0: DefaultProbes).
	Probes int
	// MaxRTTS is the longest acceptable best round trip in seconds (0:
	// DefaultMaxRTTS).
	MaxRTTS float64
}

const (
	// DefaultProbes round trips are made per measurement.
	DefaultProbes = 8
	// DefaultMaxRTTS bounds the best round trip: 50 ms, so the offset is
	// known within 25 ms, a tenth of a 250 ms sampling interval.
	DefaultMaxRTTS = 0.05
)

// ErrRTTTooLong is wrapped by Measure's error when no round trip was
// short enough.
var ErrRTTTooLong = errors.New("round trip too long")

// Measure makes o.Probes round trips with probe, local giving the run
// clock, and returns the estimate of the shortest. A probe's error ends
// the measurement (wrapped with the probe's number); a reading that is
// not finite, or a local clock that goes back, is refused.
func Measure(ctx context.Context, local func() float64, probe Probe, o Options) (Estimate, error) {
	n := o.Probes
	if n <= 0 {
		n = DefaultProbes
	}
	maxRTT := o.MaxRTTS
	if maxRTT <= 0 {
		maxRTT = DefaultMaxRTTS
	}
	best := Estimate{RTTS: math.Inf(1)}
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return Estimate{}, fmt.Errorf("clock probe %d of %d: %w", i, n, err)
		}
		t0 := local()
		r, err := probe(ctx)
		t1 := local()
		if err != nil {
			return Estimate{}, fmt.Errorf("clock probe %d of %d: %w", i, n, err)
		}
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return Estimate{}, fmt.Errorf("clock probe %d of %d: the other clock read %v", i, n, r)
		}
		if t1 < t0 {
			return Estimate{}, fmt.Errorf("clock probe %d of %d: the run clock went back %.9f s", i, n, t0-t1)
		}
		if rtt := t1 - t0; rtt < best.RTTS {
			mid := t0 + rtt/2
			best = Estimate{OffsetS: r - mid, RTTS: rtt, AtS: mid}
		}
	}
	best.Probes = n
	if best.RTTS > maxRTT {
		return best, fmt.Errorf("best of %d clock probes took %.3f s (bound %.3f s): %w", n, best.RTTS, maxRTT, ErrRTTTooLong)
	}
	return best, nil
}

// Mapping places another clock's timestamps on the run clock, from the
// offset measured at the start and, once known, at the end.
type Mapping struct {
	Start Estimate
	// End is the estimate at the end; zero until Ended.
	End   Estimate
	Ended bool
}

// NewMapping starts a mapping from the start estimate.
func NewMapping(start Estimate) Mapping { return Mapping{Start: start} }

// WithEnd returns the mapping with the end estimate.
func (m Mapping) WithEnd(end Estimate) Mapping {
	m.End, m.Ended = end, true
	return m
}

// offsetAt is the offset at run-clock time t: the start's before the end
// is known, else interpolated linearly between the two estimates' times
// (held constant outside them).
func (m Mapping) offsetAt(t float64) float64 {
	if !m.Ended || m.End.AtS <= m.Start.AtS {
		return m.Start.OffsetS
	}
	switch {
	case t <= m.Start.AtS:
		return m.Start.OffsetS
	case t >= m.End.AtS:
		return m.End.OffsetS
	}
	f := (t - m.Start.AtS) / (m.End.AtS - m.Start.AtS)
	return m.Start.OffsetS + f*(m.End.OffsetS-m.Start.OffsetS)
}

// ToRun maps a timestamp of the other clock to the run clock: the run
// time t at which the other clock read remote, remote = t + offset(t),
// with the offset interpolated linearly between the start and the end
// estimates (held constant outside them). The line is inverted exactly,
// so a clock drifting at a steady rate, however fast, is placed within the
// estimates' uncertainty. Before the end is known, the start offset.
func (m Mapping) ToRun(remote float64) float64 {
	if !m.Ended || m.End.AtS <= m.Start.AtS {
		return remote - m.Start.OffsetS
	}
	// offset(t) = a + b (t − s) for t in [s, e]; remote = t + offset(t)
	// gives t = s + (remote − a − s) / (1 + b).
	b := (m.End.OffsetS - m.Start.OffsetS) / (m.End.AtS - m.Start.AtS)
	if 1+b <= 0 {
		// The other clock ran backwards over the span: no single time
		// reads remote; the offset at its approximate time.
		return remote - m.offsetAt(remote-m.Start.OffsetS)
	}
	t := m.Start.AtS + (remote-m.Start.OffsetS-m.Start.AtS)/(1+b)
	switch {
	case t <= m.Start.AtS:
		return remote - m.Start.OffsetS
	case t >= m.End.AtS:
		return remote - m.End.OffsetS
	}
	return t
}

// RePlace places again a time that was placed on the run clock with the
// start offset alone (t = remote − Start.OffsetS, as samples streamed
// before the end was known): with the end known, it is the remote time
// mapped with the offset interpolated between the start and the end
// (ToRun); before, t unchanged.
func (m Mapping) RePlace(t float64) float64 {
	if !m.Ended {
		return t
	}
	return m.ToRun(t + m.Start.OffsetS)
}

// DriftS is how far the offset moved from start to end (end − start); 0
// before the end is known.
func (m Mapping) DriftS() float64 {
	if !m.Ended {
		return 0
	}
	return m.End.OffsetS - m.Start.OffsetS
}

// CheckDrift refuses a mapping whose offset moved more than maxDriftS
// between the start and the end, beyond what the two estimates'
// uncertainties explain.
func (m Mapping) CheckDrift(maxDriftS float64) error {
	if !m.Ended {
		return nil
	}
	slack := m.Start.UncertaintyS() + m.End.UncertaintyS()
	if d := math.Abs(m.DriftS()); d > maxDriftS+slack {
		return fmt.Errorf("clock offset drifted %.6f s between start (%.6f s) and end (%.6f s); bound %.6f s plus the estimates' uncertainty %.6f s",
			d, m.Start.OffsetS, m.End.OffsetS, maxDriftS, slack)
	}
	return nil
}
