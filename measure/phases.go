package measure

import (
	"fmt"
	"math"

	"github.com/joulebench/joulebench/archive/record"
)

// PhaseSplit is the energy of devices that serve both phases of inference
// over a window, split between them (SplitPhases).
type PhaseSplit struct {
	// PrefillJ is the energy attributed to requests waiting for their
	// first token (sent_at to first_token_at), DecodeJ to requests
	// generating (first_token_at to done_at).
	PrefillJ, DecodeJ float64
	// IdleJ is the energy of the stretches of the window with no request
	// in flight: neither phase's.
	IdleJ float64
	// Requests counts the requests in flight at some time of the window.
	Requests int
}

// SplitPhases splits the energy of p's devices on [a, b] between prefill
// and decode by time-sliced attribution (docs/methodology.md, "Several
// nodes"): at each instant the power is shared equally among the requests
// in flight (the rule of AttributeResident); a request's share counts to
// prefill from its SentAt to its FirstTokenAt, to decode from then to its
// DoneAt. Time with no request in flight is IdleJ. PrefillJ + DecodeJ +
// IdleJ is Energy(a, b, method), up to rounding.
//
// A request is in flight when its SentAt and DoneAt are finite, SentAt > 0
// and DoneAt > SentAt; its FirstTokenAt is clamped into [SentAt, DoneAt]
// and taken as DoneAt when absent (0: no token came, it never left
// prefill). Its times are clipped to [a, b]. The caller chooses the
// requests (the profiles pass the successful formal ones).
func (p *PowerData) SplitPhases(reqs []*record.Request, a, b float64, method string) (PhaseSplit, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return PhaseSplit{}, fmt.Errorf("split_phases: %w", err)
	}
	if err := checkInterval(a, b); err != nil {
		return PhaseSplit{}, fmt.Errorf("split_phases: %w", err)
	}
	var out PhaseSplit
	if a == b {
		return out, nil
	}
	// The spans of the requests in flight in [a, b], counted first: the
	// lists are made once at their size (issue 46: two spans a request).
	n := 0
	for i, r := range reqs {
		if r == nil {
			return PhaseSplit{}, fmt.Errorf("split_phases: request %d is nil", i)
		}
		pre, dec, ok := phaseSpans(r, a, b)
		if ok {
			n += spanCount(pre) + spanCount(dec)
		}
	}
	spans := make([][2]float64, 0, n)
	prefill := make([]bool, 0, n) // per span: a prefill span (else decode)
	for _, r := range reqs {
		pre, dec, ok := phaseSpans(r, a, b)
		if !ok {
			continue
		}
		out.Requests++
		if spanCount(pre) > 0 {
			spans, prefill = append(spans, pre), append(prefill, true)
		}
		if spanCount(dec) > 0 {
			spans, prefill = append(spans, dec), append(prefill, false)
		}
	}
	shares, idle, err := p.residentShares(spans, []float64{a, b}, useCounter)
	if err != nil {
		return PhaseSplit{}, fmt.Errorf("split_phases: %w", err)
	}
	out.IdleJ = idle
	for k, e := range shares {
		if prefill[k] {
			out.PrefillJ += e
		} else {
			out.DecodeJ += e
		}
	}
	for _, v := range [...]float64{out.PrefillJ, out.DecodeJ, out.IdleJ} {
		if !finite(v) {
			return PhaseSplit{}, fmt.Errorf("split_phases: energy on [%s, %s] is %v", fmtT(a), fmtT(b), v)
		}
	}
	return out, nil
}

// phaseSpans is r's prefill and decode spans clipped to [a, b] (either
// may be empty: spanCount 0); ok false when r is not in flight in [a, b]
// (SplitPhases).
func phaseSpans(r *record.Request, a, b float64) (pre, dec [2]float64, ok bool) {
	sent, done := r.SentAt, r.DoneAt
	if !finite(sent) || !finite(done) || !finite(r.FirstTokenAt) || sent <= 0 || done <= sent {
		return pre, dec, false
	}
	first := r.FirstTokenAt
	if first == 0 {
		first = done
	}
	first = min(max(first, sent), done)
	lo, hi := max(sent, a), min(done, b)
	if hi <= lo {
		return pre, dec, false
	}
	return [2]float64{lo, min(first, hi)}, [2]float64{max(first, lo), hi}, true
}

// spanCount is 1 for a span of positive length, else 0.
func spanCount(s [2]float64) int {
	if s[1] > s[0] {
		return 1
	}
	return 0
}

// Subset is the power data of the named devices only (in the order
// named), sharing p's indexed samples: for integrating a part of the
// devices (a role, a host). Its counter glitches are those of its devices;
// it keeps no record of samples that went back in time (audit p for
// that). An unknown or repeated device, or none, is an error.
func (p *PowerData) Subset(devices []string) (*PowerData, error) {
	if p == nil {
		return nil, fmt.Errorf("no power data")
	}
	if len(devices) == 0 {
		return nil, fmt.Errorf("subset of no device")
	}
	out := &PowerData{byName: make(map[string]int, len(devices)), hasCounter: true}
	for i, name := range devices {
		d, err := p.device(name)
		if err != nil {
			return nil, err
		}
		if _, dup := out.byName[name]; dup {
			return nil, fmt.Errorf("device %q named twice", name)
		}
		out.byName[name] = i
		out.devs = append(out.devs, d)
		out.hasCounter = out.hasCounter && d.e != nil
		if i == 0 || d.t[0] < out.start {
			out.start = d.t[0]
		}
		if i == 0 || d.t[len(d.t)-1] > out.end {
			out.end = d.t[len(d.t)-1]
		}
	}
	for _, g := range p.glitches {
		if _, ok := out.byName[g.Device]; ok {
			out.glitches = append(out.glitches, g)
		}
	}
	return out, nil
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
