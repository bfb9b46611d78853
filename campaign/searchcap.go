package campaign

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// An slo search over the GPU power limit (search.over: gpu_power_limit_w)
// holds the load at search.load and bisects the limit between low and high
// (W) for the lowest one whose SLO attainment reaches the target: a lower
// limit draws less power and slows the GPUs, so attainment rises with the
// limit. Each point is a run with --set gpu_power_limit_w=W.

// CapLoad is search.load: the fixed load of a search over the limit.
type CapLoad struct {
	Mode        string  `yaml:"mode"`
	Concurrency int     `yaml:"concurrency"`
	Rate        float64 `yaml:"rate"`
}

// validateCapSearch checks an slo search over the power limit.
func (c *Campaign) validateCapSearch(d *errSink, at func(path ...string) *yaml.Node) {
	s := &c.Search
	if s.Low <= 0 || s.High <= 0 {
		d.Errorf(at("high"), "search.high", "a search over %s needs low and high, in W, both above 0", gpusettings.ParamPowerLimit)
	}
	if s.Tolerance == 0 {
		s.Tolerance = 10
	}
	l := s.Load
	inFlight, allAtOnce := inFlightPoint(0).Mode, allAtOncePoint().Mode
	switch {
	case l == nil || l.Mode == "":
		d.Errorf(at("load"), "search.load", "a search over %s holds the load fixed: give it, e.g. {mode: %s, concurrency: 16}", gpusettings.ParamPowerLimit, inFlight)
	case l.Mode == inFlight && l.Concurrency < 1:
		d.Errorf(at("load", "concurrency"), "search.load.concurrency", "must be at least 1, got %d", l.Concurrency)
	case l.Mode != inFlight && l.Mode != allAtOnce && !(l.Rate > 0):
		d.Errorf(at("load", "rate"), "search.load.rate", "mode %s needs a rate above 0 (requests/s)", l.Mode)
	}
}

// capPoint is the load point of limit w at the fixed load.
func (s *Search) capPoint(w float64) LoadPoint {
	l := s.Load
	return LoadPoint{Mode: l.Mode, Concurrency: l.Concurrency, Rate: l.Rate, PowerLimitW: math.Round(w)}
}

// runSLOCap bisects the power limit between Low and High for the lowest
// limit meeting the SLO at the fixed load, until the bracket is within
// Tolerance or MaxRuns runs are spent. A failed run counts as not meeting
// the SLO.
func (s *Search) runSLOCap(ctx context.Context, probe Probe, emit func(Decision) error) (SLOResult, error) {
	step := 0
	meets := func(w float64, next func(ok bool) string) (bool, error) {
		return s.measurePoint(ctx, probe, emit, &step, s.capPoint(w), next)
	}
	name := func(w float64) string { return s.capPoint(w).Name() }
	lo, hi := s.Low, s.High
	ok, err := meets(hi, func(ok bool) string {
		if ok {
			return "low bound " + name(lo)
		}
		return "stop: the SLO is not met even at the highest power limit"
	})
	if err != nil || !ok {
		return SLOResult{}, err
	}
	ok, err = meets(lo, func(ok bool) string {
		if ok {
			return "stop: the SLO is met at the lowest power limit"
		}
		return fmt.Sprintf("bisect %s..%s", name(lo), name(hi))
	})
	if err != nil {
		return SLOResult{}, err
	}
	if ok {
		return SLOResult{Found: true, Load: s.capPoint(lo)}, nil
	}
	mid := func(a, b float64) float64 { return math.Round((a + b) / 2) }
	for step < s.MaxRuns && hi-lo > s.Tolerance {
		m := mid(lo, hi)
		if m <= lo || m >= hi {
			break
		}
		ok, err := meets(m, func(ok bool) string {
			nlo, nhi := lo, hi
			if ok {
				nhi = m
			} else {
				nlo = m
			}
			if step >= s.MaxRuns || nhi-nlo <= s.Tolerance || mid(nlo, nhi) <= nlo {
				return fmt.Sprintf("stop: lowest power limit meeting the SLO %s (bracket %s..%s)", name(nhi), name(nlo), name(nhi))
			}
			return fmt.Sprintf("bisect %s..%s", name(nlo), name(nhi))
		})
		if err != nil {
			return SLOResult{}, err
		}
		if ok {
			hi = m
		} else {
			lo = m
		}
	}
	return SLOResult{Found: true, Load: s.capPoint(hi)}, nil
}

// capName is the limit's part of a point's name: "-p250".
func capName(w float64) string {
	if w <= 0 {
		return ""
	}
	return "-p" + strconv.FormatFloat(w, 'f', -1, 64)
}
