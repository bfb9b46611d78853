package measure

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// AuditStage is one measured stage the power audit covers.
type AuditStage struct {
	Name       string
	Start, End float64
}

// AuditOptions configure PowerData.Audit.
type AuditOptions struct {
	// MaxGapS is the largest gap (s) allowed between two successive
	// samples of a device inside a stage; ≤ 0 checks no gap.
	MaxGapS float64
	// Devices are the devices expected in every stage (run.json's
	// hardware.devices); devices of the data that are not listed are
	// audited too.
	Devices []string
	// BoundW is each device's highest plausible power in W (0 or absent:
	// no bound), and BoundWhy says where it comes from ("1.2 × power limit
	// 700 W"), for the detail.
	BoundW   map[string]float64
	BoundWhy map[string]string
}

// Audit is what the power validity audit found; every finding is one
// sentence naming the device, the stage and the times.
type Audit struct {
	// Gaps: a device's samples more than MaxGapS apart inside a stage.
	Gaps []string
	// Missing: a device without samples from the start to the end of a
	// stage.
	Missing []string
	// Bounds: a sample above the device's plausible bound inside a stage.
	Bounds []string
	// Zeros: a device whose every sample inside a stage reads 0 W.
	Zeros []string
	// Order: a device whose samples go back in time in the file.
	Order []string
	// MaxGapS is the largest time (s) inside any stage that a device has
	// no sample for: between two successive samples, or from the stage's
	// start to its first sample, or from its last sample to the stage's end.
	MaxGapS float64
}

// Reasons lists every finding, in the order order, gaps, missing, bounds,
// zeros.
func (a Audit) Reasons() []string {
	return slices.Concat(a.Order, a.Gaps, a.Missing, a.Bounds, a.Zeros)
}

// Audit checks the samples of every device over each stage: presence from
// start to end, the largest gap between successive samples (the segments
// that overlap the stage, so a gap straddling a boundary counts), power
// within the device's bound, not all zero, and time never going back in
// the file (NewPowerData sorts; the order it found is kept here).
func (p *PowerData) Audit(stages []AuditStage, o AuditOptions) Audit {
	var out Audit
	if p == nil {
		return out
	}
	out.Order = slices.Clone(p.backInTime)
	names := slices.Clone(o.Devices)
	for _, d := range p.Devices() {
		if !slices.Contains(names, d) {
			names = append(names, d)
		}
	}
	for _, st := range stages {
		if !(st.End > st.Start) {
			continue
		}
		for _, name := range names {
			k, ok := p.byName[name]
			if !ok {
				out.MaxGapS = max(out.MaxGapS, st.End-st.Start)
				out.Missing = append(out.Missing, fmt.Sprintf("device %s has no power samples at all (stage %s, [%s, %s])",
					name, st.Name, fmtT(st.Start), fmtT(st.End)))
				continue
			}
			p.devs[k].audit(st, o, &out)
		}
	}
	return out
}

// audit checks one device over one stage.
func (d *powerSeries) audit(st AuditStage, o AuditOptions, out *Audit) {
	n := len(d.t)
	first, last := d.t[0], d.t[n-1]
	// A part of the stage without samples at its start or end is a gap
	// too for MaxGapS (an exporter that died leaves one sample before the
	// stage); it is reported as missing, not as a gap between samples.
	out.MaxGapS = max(out.MaxGapS, min(st.End-st.Start, max(first-st.Start, st.End-last, 0)))
	if last < st.Start || first > st.End {
		out.Missing = append(out.Missing, fmt.Sprintf("device %s has no samples in stage %s [%s, %s] (its samples cover [%s, %s])",
			d.name, st.Name, fmtT(st.Start), fmtT(st.End), fmtT(first), fmtT(last)))
		return
	}
	if first > st.Start {
		out.Missing = append(out.Missing, fmt.Sprintf("device %s: samples start at t=%s, %s s after stage %s starts (t=%s)",
			d.name, fmtT(first), fmtS(first-st.Start), st.Name, fmtT(st.Start)))
	}
	if last < st.End {
		out.Missing = append(out.Missing, fmt.Sprintf("device %s: samples end at t=%s, %s s before stage %s ends (t=%s): the recording stopped",
			d.name, fmtT(last), fmtS(st.End-last), st.Name, fmtT(st.End)))
	}
	// Segments [t[m], t[m+1]] that overlap (start, end): m from the one
	// holding start to the one holding end.
	lo := max(0, sort.Search(n, func(i int) bool { return d.t[i] > st.Start })-1)
	hi := min(n-1, sort.Search(n, func(i int) bool { return d.t[i] >= st.End }))
	worst, at := 0.0, -1
	for m := lo; m < hi; m++ {
		if g := d.t[m+1] - d.t[m]; g > worst {
			worst, at = g, m
		}
	}
	out.MaxGapS = max(out.MaxGapS, worst)
	if o.MaxGapS > 0 && worst > o.MaxGapS {
		out.Gaps = append(out.Gaps, fmt.Sprintf("device %s: %s s without samples in stage %s, from t=%s to t=%s (stage +%s s), more than max_sample_gap %s s",
			d.name, fmtS(worst), st.Name, fmtT(d.t[at]), fmtT(d.t[at+1]), fmtS(max(0, d.t[at]-st.Start)), fmtS(o.MaxGapS)))
	}
	// Samples inside [start, end].
	in0 := sort.SearchFloat64s(d.t, st.Start)
	in1 := sort.Search(n, func(i int) bool { return d.t[i] > st.End })
	if in0 >= in1 {
		return
	}
	peak, zero := in0, true
	for m := in0; m < in1; m++ {
		if d.p[m] > d.p[peak] {
			peak = m
		}
		zero = zero && d.p[m] == 0
	}
	if b := o.BoundW[d.name]; b > 0 && d.p[peak] > b {
		why := o.BoundWhy[d.name]
		if why != "" {
			why = " (" + why + ")"
		}
		out.Bounds = append(out.Bounds, fmt.Sprintf("device %s: %s W at t=%s in stage %s, above the plausible %s W%s",
			d.name, fmtT(d.p[peak]), fmtT(d.t[peak]), st.Name, fmtT(b), why))
	}
	if zero {
		out.Zeros = append(out.Zeros, fmt.Sprintf("device %s: 0 W on every sample of stage %s (%d samples): no power reading",
			d.name, st.Name, in1-in0))
	}
}

// fmtS formats a duration in seconds to the millisecond.
func fmtS(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".")
}
