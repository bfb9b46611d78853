package measure

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// Energy integration methods accepted by PowerData.Energy and friends.
const (
	MethodTrapz   = "trapz"
	MethodCounter = "counter"
	MethodAuto    = "auto"
)

// PowerData is the power.csv of one run, indexed for fast integration: one
// time-sorted series per device with prefix sums, so that the energy over
// any interval costs O(log n) per device.
type PowerData struct {
	devs       []*powerSeries
	byName     map[string]int
	hasCounter bool
	start, end float64
	glitches   []CounterGlitch
	// backInTime says, per device whose samples go back in time in the
	// input order, where first and how often (Audit's Order).
	backInTime []string
}

// Kinds of energy-counter glitches.
const (
	GlitchReset    = "reset"    // the counter fell and stayed low (restarted)
	GlitchBackward = "backward" // samples below their predecessor, then back up to its level
	GlitchSpike    = "spike"    // samples above their neighbours, then back down to the level before
	GlitchFrozen   = "frozen"   // the counter stood still while the device drew power
)

// CounterGlitch is a stretch of one device's cumulative energy counter that
// cannot be trusted: on [From, To] (between two samples) the device's
// counter energy is its trapezoid energy instead.
type CounterGlitch struct {
	Device string
	Kind   string
	From   float64
	To     float64
	// FromJ and ToJ are the raw counter readings at From and To.
	FromJ float64
	ToJ   float64
	// ReadingsJ are the raw readings of every sample on [From, To].
	ReadingsJ []float64
}

func (g CounterGlitch) String() string {
	what := map[string]string{
		GlitchReset:    "counter reset",
		GlitchBackward: "counter stepped backward",
		GlitchSpike:    "counter jumped up and came back",
		GlitchFrozen:   "counter frozen while power > 0",
	}[g.Kind]
	rs := g.ReadingsJ
	if len(rs) == 0 || len(rs) > 4 {
		rs = []float64{g.FromJ, g.ToJ}
	}
	readings := make([]string, len(rs))
	for i, r := range rs {
		readings[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return fmt.Sprintf("device %s: %s on [%s, %s] (counter %s J): trapezoid used",
		g.Device, what, fmtT(g.From), fmtT(g.To), strings.Join(readings, " → "))
}

// powerSeries is one device's samples, sorted by time.
type powerSeries struct {
	name string
	t    []float64 // sample times, strictly increasing
	p    []float64 // power in W, finite and ≥ 0
	// cum[i] is the trapezoid integral of p from t[0] to t[i] (J).
	cum []float64
	// e is the cumulative energy counter (J), corrected: across a glitch
	// (CounterGlitch) it grows by the trapezoid energy instead, so it is
	// monotone; nil when any sample of the device lacks a counter.
	e   []float64
	mem memRuns // memory used in bytes, -1 when unknown
}

// NewPowerData groups samples by device (in order of first appearance),
// stable-sorts each device's samples by time and builds the prefix sums.
//
// It rejects NaN or infinite times, NaN, infinite or negative power, NaN,
// infinite or negative energy counters, an empty device name, and two
// samples of one device at the same time.
//
// A cumulative counter is checked for glitches (see correctCounter): a
// reset, a backward step, or a frozen counter. On each glitched segment the
// device's counter energy falls back to the trapezoid energy of that
// segment; CounterGlitches lists them.
func NewPowerData(samples []record.PowerSample) (*PowerData, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("no power samples")
	}
	if len(samples) > math.MaxInt32 {
		return nil, fmt.Errorf("too many power samples (%d)", len(samples))
	}
	pd := &PowerData{byName: map[string]int{}}
	groups := [][]int32{}
	for i := range samples {
		s := &samples[i]
		if s.Device == "" {
			return nil, fmt.Errorf("power sample %d: empty device name", i)
		}
		if math.IsNaN(s.T) || math.IsInf(s.T, 0) {
			return nil, fmt.Errorf("power sample %d (device %q): time is %v", i, s.Device, s.T)
		}
		if math.IsNaN(s.PowerW) || math.IsInf(s.PowerW, 0) || s.PowerW < 0 {
			return nil, fmt.Errorf("power sample %d (device %q, t=%s): invalid power %v W", i, s.Device, fmtT(s.T), s.PowerW)
		}
		if s.HasEnergy && (math.IsNaN(s.EnergyJ) || math.IsInf(s.EnergyJ, 0) || s.EnergyJ < 0) {
			return nil, fmt.Errorf("power sample %d (device %q, t=%s): invalid energy counter %v J", i, s.Device, fmtT(s.T), s.EnergyJ)
		}
		k, ok := pd.byName[s.Device]
		if !ok {
			k = len(groups)
			pd.byName[s.Device] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], int32(i))
	}
	pd.hasCounter = true
	for k, idx := range groups {
		name := samples[idx[0]].Device
		// Stable sort by time; skipped when already sorted (the usual case).
		if !slices.IsSortedFunc(idx, func(a, b int32) int { return cmp.Compare(samples[a].T, samples[b].T) }) {
			pd.backInTime = append(pd.backInTime, describeBackInTime(name, samples, idx))
			slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(samples[a].T, samples[b].T) })
		}
		n := len(idx)
		ds := &powerSeries{
			name: name,
			t:    make([]float64, n),
			p:    make([]float64, n),
			cum:  make([]float64, n),
		}
		counter := true
		for j, si := range idx {
			s := &samples[si]
			ds.t[j] = s.T
			ds.p[j] = s.PowerW
			ds.mem.appendMem(max(s.MemUsedBytes, -1))
			if !s.HasEnergy {
				counter = false
			}
			if j > 0 {
				if s.T == ds.t[j-1] {
					return nil, fmt.Errorf("device %q has two samples at t=%s", name, fmtT(s.T))
				}
				ds.cum[j] = ds.cum[j-1] + (ds.p[j-1]+ds.p[j])/2*(ds.t[j]-ds.t[j-1])
			}
		}
		if math.IsInf(ds.cum[n-1], 0) {
			return nil, fmt.Errorf("device %q: integrated energy overflows", name)
		}
		if counter {
			raw := make([]float64, n)
			for j, si := range idx {
				raw[j] = samples[si].EnergyJ
			}
			var gs []CounterGlitch
			ds.e, gs = ds.correctCounter(raw)
			pd.glitches = append(pd.glitches, gs...)
		} else {
			pd.hasCounter = false
		}
		pd.devs = append(pd.devs, ds)
		if k == 0 || ds.t[0] < pd.start {
			pd.start = ds.t[0]
		}
		if k == 0 || ds.t[n-1] > pd.end {
			pd.end = ds.t[n-1]
		}
	}
	return pd, nil
}

// describeBackInTime says where a device's samples (idx, in input order)
// first go back in time, and how many samples come earlier than one
// before them.
func describeBackInTime(name string, samples []record.PowerSample, idx []int32) string {
	latest, count := samples[idx[0]].T, 0
	first := ""
	for _, si := range idx[1:] {
		t := samples[si].T
		if t < latest {
			if count == 0 {
				first = fmt.Sprintf("sample %d at t=%s comes after t=%s (%s s back)", si, fmtT(t), fmtT(latest), fmtS(latest-t))
			}
			count++
		}
		latest = max(latest, t)
	}
	return fmt.Sprintf("device %s: time goes back: %s; %d samples earlier than one before them", name, first, count)
}

// Devices returns the device IDs in order of first appearance.
func (p *PowerData) Devices() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.devs))
	for i, d := range p.devs {
		out[i] = d.name
	}
	return out
}

// HasCounter reports whether every sample of every device carries a
// cumulative energy counter.
func (p *PowerData) HasCounter() bool { return p != nil && p.hasCounter }

// Span returns the overall time range of the samples (earliest first sample
// to latest last sample over all devices).
func (p *PowerData) Span() (start, end float64) {
	if p == nil {
		return 0, 0
	}
	return p.start, p.end
}

// CounterResets lists every counter reset (a decrease that did not come
// back), as "device X at t=… (counter A J → B J)".
func (p *PowerData) CounterResets() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, g := range p.glitches {
		if g.Kind == GlitchReset {
			out = append(out, fmt.Sprintf("device %s at t=%s (counter %s J → %s J)", g.Device, fmtT(g.To), fmtNum(g.FromJ), fmtNum(g.ToJ)))
		}
	}
	return out
}

// CounterGlitches returns the counter glitches whose interval overlaps
// (a, b), by device in order of first appearance, then by time. Use
// math.Inf(-1), math.Inf(1) for all of them.
func (p *PowerData) CounterGlitches(a, b float64) []CounterGlitch {
	if p == nil {
		return nil
	}
	var out []CounterGlitch
	for _, g := range p.glitches {
		if g.From < b && g.To > a {
			out = append(out, g)
		}
	}
	return out
}

// CounterCheck compares counter and trapezoid energy over one interval.
type CounterCheck struct {
	CounterJ float64
	TrapzJ   float64
	// RelDiff is |CounterJ - TrapzJ| / max(CounterJ, TrapzJ); 0 when both
	// are 0.
	RelDiff  float64
	Glitches []CounterGlitch
}

// CounterVsTrapz computes the energy on [a, b] by the (glitch-corrected)
// counter and by the trapezoid, their relative difference, and the counter
// glitches inside. Every device needs a counter.
func (p *PowerData) CounterVsTrapz(a, b float64) (CounterCheck, error) {
	c, err := p.Energy(a, b, MethodCounter)
	if err != nil {
		return CounterCheck{}, err
	}
	t, err := p.Energy(a, b, MethodTrapz)
	if err != nil {
		return CounterCheck{}, err
	}
	out := CounterCheck{CounterJ: c, TrapzJ: t, Glitches: p.CounterGlitches(a, b)}
	if m := max(c, t); m > 0 {
		out.RelDiff = math.Abs(c-t) / m
	}
	return out, nil
}

// Energy returns the energy in J summed over all devices on [a, b].
//
// method "trapz": each device's power is linearly interpolated at a and b
// between the neighbouring samples and integrated with the composite
// trapezoidal rule over [a, b] including the interpolated end points.
// method "counter": each device's cumulative counter is linearly
// interpolated at a and b and differenced (an error if any device lacks a
// counter on any sample). method "auto": "counter" when HasCounter, else "trapz".
//
// a > b, a NaN bound, or [a, b] not inside a device's sample range is an
// error. The result is never negative. O(D log n) for D devices.
func (p *PowerData) Energy(a, b float64, method string) (float64, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return 0, err
	}
	if err := checkInterval(a, b); err != nil {
		return 0, err
	}
	total := 0.0
	for _, d := range p.devs {
		e, err := d.energy(a, b, useCounter)
		if err != nil {
			return 0, err
		}
		total += e
	}
	if math.IsInf(total, 0) || math.IsNaN(total) {
		return 0, fmt.Errorf("energy on [%s, %s]: result is %v", fmtT(a), fmtT(b), total)
	}
	return total, nil
}

// DeviceEnergy is Energy for one device ("counter" needs only this device's
// counter). "auto" follows the same rule as
// Energy (counter only when every device has one), so that Energy equals the
// sum of DeviceEnergy over Devices for every method.
func (p *PowerData) DeviceEnergy(device string, a, b float64, method string) (float64, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return 0, err
	}
	d, err := p.device(device)
	if err != nil {
		return 0, err
	}
	if err := checkInterval(a, b); err != nil {
		return 0, err
	}
	return d.energy(a, b, useCounter)
}

// MeanPower returns a device's time-weighted mean power in W on [a, b]: its
// trapezoid energy divided by b-a; for b == a, the power interpolated at a.
func (p *PowerData) MeanPower(device string, a, b float64) (float64, error) {
	d, err := p.device(device)
	if err != nil {
		return 0, err
	}
	if err := checkInterval(a, b); err != nil {
		return 0, err
	}
	if err := d.checkRange(a, b); err != nil {
		return 0, err
	}
	if a == b {
		return d.powerAt(d.loc(a), a), nil
	}
	e, err := d.energy(a, b, false)
	if err != nil {
		return 0, err
	}
	w := e / (b - a)
	if math.IsInf(w, 0) || math.IsNaN(w) {
		return 0, fmt.Errorf("mean power of device %q on [%s, %s]: result is %v", device, fmtT(a), fmtT(b), w)
	}
	return w, nil
}

// MaxMem returns the largest known memory use (bytes) among a device's
// samples with a ≤ t ≤ b. ok is false for an unknown device, an invalid
// interval, or when no sample in [a, b] has a known value.
func (p *PowerData) MaxMem(device string, a, b float64) (int64, bool) {
	if p == nil {
		return 0, false
	}
	k, found := p.byName[device]
	if !found || math.IsNaN(a) || math.IsNaN(b) || a > b {
		return 0, false
	}
	d := p.devs[k]
	best := d.mem.maxIn(sort.SearchFloat64s(d.t, a), upperBound(d.t, b))
	if best < 0 {
		return 0, false
	}
	return best, true
}

// resolveMethod maps a method name to "use the counter?".
func (p *PowerData) resolveMethod(method string) (bool, error) {
	if p == nil || len(p.devs) == 0 {
		return false, fmt.Errorf("no power data")
	}
	switch method {
	case MethodTrapz:
		return false, nil
	case MethodCounter:
		// a device without counter is an error when it is integrated
		return true, nil
	case MethodAuto:
		return p.hasCounter, nil
	}
	return false, fmt.Errorf("unknown energy method %q (want %q, %q or %q)", method, MethodTrapz, MethodCounter, MethodAuto)
}

func (p *PowerData) device(name string) (*powerSeries, error) {
	if p == nil {
		return nil, fmt.Errorf("no power data")
	}
	k, ok := p.byName[name]
	if !ok {
		return nil, fmt.Errorf("unknown device %q (have %v)", name, p.Devices())
	}
	return p.devs[k], nil
}

// commonRange is the time range covered by every device, and the devices
// that limit it.
func (p *PowerData) commonRange() (lo, hi float64, loDev, hiDev string) {
	for i, d := range p.devs {
		if i == 0 || d.t[0] > lo {
			lo, loDev = d.t[0], d.name
		}
		if i == 0 || d.t[len(d.t)-1] < hi {
			hi, hiDev = d.t[len(d.t)-1], d.name
		}
	}
	return
}

func checkInterval(a, b float64) error {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return fmt.Errorf("invalid interval [%v, %v]", a, b)
	}
	if a > b {
		return fmt.Errorf("invalid interval [%s, %s]: start after end", fmtT(a), fmtT(b))
	}
	return nil
}

func (d *powerSeries) checkRange(a, b float64) error {
	if a < d.t[0] || b > d.t[len(d.t)-1] {
		return fmt.Errorf("interval [%s, %s] is outside the samples of device %q, which cover [%s, %s]",
			fmtT(a), fmtT(b), d.name, fmtT(d.t[0]), fmtT(d.t[len(d.t)-1]))
	}
	return nil
}

// loc returns the segment holding x: the largest i ≤ n-2 with t[i] ≤ x (0
// for a single-sample series). x must lie in [t[0], t[n-1]].
func (d *powerSeries) loc(x float64) int {
	n := len(d.t)
	if n < 2 {
		return 0
	}
	// first index with t > x, minus one
	i := sort.Search(n, func(k int) bool { return d.t[k] > x }) - 1
	return max(0, min(i, n-2))
}

// correctCounter returns the device's counter made trustworthy, and the
// glitches found in raw (one reading per sample, in time order). Segment j
// is [t[j], t[j+1]]. A glitched segment grows the corrected counter by its
// trapezoid energy instead of by raw[j+1] - raw[j], so that the energy of a
// glitch is removed, not only noted:
//   - a drop, raw[j+1] < raw[j], is explained (resolveDrop) as a reset (the
//     counter restarted lower and counts on: segment j), a backward
//     excursion (samples j+1 … k-1 read low and raw[k] ≥ raw[j]: segments j
//     … k-1, including the jump back up), or a spike (samples i+1 … j read
//     high and raw[i] ≤ raw[j+1]: segments i … j, including the jump up);
//   - raw[j+1] == raw[j] while power at t[j] or t[j+1] is > 0: a frozen
//     counter; the run of such segments and the one after it (where a
//     counter that resumes catches up) are glitched.
//
// The corrected counter starts at raw[0] and grows on each segment by
// raw[j+1] - raw[j], or by the segment's trapezoid energy when glitched.
// A jump up that never comes down again cannot be told from real energy
// here; the counter-vs-trapezoid check sees it.
func (d *powerSeries) correctCounter(raw []float64) ([]float64, []CounterGlitch) {
	n := len(raw)
	bad := make([]bool, max(0, n-1))
	var gs []CounterGlitch
	add := func(kind string, from, to int) {
		gs = append(gs, CounterGlitch{Device: d.name, Kind: kind, From: d.t[from], To: d.t[to], FromJ: raw[from], ToJ: raw[to],
			ReadingsJ: slices.Clone(raw[from : to+1])})
		for k := from; k < to; k++ {
			bad[k] = true
		}
	}
	frozen := func(j int) bool { return raw[j+1] == raw[j] && (d.p[j] > 0 || d.p[j+1] > 0) }
	lo := 0 // the first sample not inside an earlier glitch
	for j := 0; j+1 < n; {
		switch {
		case raw[j+1] < raw[j]:
			kind, from, to := d.resolveDrop(raw, j, lo)
			add(kind, from, to)
			j, lo = to, to
		case frozen(j):
			k := j + 1
			for k+1 < n && frozen(k) {
				k++
			}
			// k is the first sample after the frozen run; the segment
			// after it holds any catch-up.
			end := min(k+1, n-1)
			add(GlitchFrozen, j, end)
			j, lo = end, end
		default:
			j++
		}
	}
	e := make([]float64, n)
	e[0] = raw[0]
	for j := 0; j+1 < n; j++ {
		inc := raw[j+1] - raw[j]
		if bad[j] {
			inc = d.cum[j+1] - d.cum[j]
		}
		e[j+1] = e[j] + inc
	}
	return e, gs
}

// glitchReach is how many samples before or after a drop resolveDrop looks
// for the counter's level before it (a spike) or its return (an
// excursion).
const glitchReach = 32

// resolveDrop explains the drop raw[j+1] < raw[j] and returns the glitch
// kind and the samples [from, to] whose segments are glitched. The
// candidates:
//   - reset: segment j only (the counter restarted and counts on);
//   - backward excursion: k, the first sample after j+1 (within
//     glitchReach) with raw[k] ≥ raw[j]: segments j … k-1;
//   - spike: i, the last sample before j (not before lo, within
//     glitchReach) with raw[i] ≤ raw[j+1]: segments i … j.
//
// Each candidate is judged by the energy it gives over the span of all
// three (segments it does not mark, and any other drop, keep their counter
// increments or take the trapezoid when negative) against the trapezoid
// energy of that span: the closest wins, ties in the order reset,
// excursion, spike. A genuine counter agrees with the trapezoid; the
// up-step of a spike or the jump back of an excursion does not.
func (d *powerSeries) resolveDrop(raw []float64, j, lo int) (kind string, from, to int) {
	n := len(raw)
	k := -1
	for m := j + 2; m < n && m <= j+1+glitchReach; m++ {
		if raw[m] >= raw[j] {
			k = m
			break
		}
	}
	i := -1
	for m := j - 1; m >= lo && m >= j-glitchReach; m-- {
		if raw[m] <= raw[j+1] {
			i = m
			break
		}
	}
	if k < 0 && i < 0 {
		return GlitchReset, j, j + 1
	}
	spanFrom, spanTo := j, j+1
	if i >= 0 {
		spanFrom = i
	}
	if k >= 0 {
		spanTo = k
	}
	trapz := d.cum[spanTo] - d.cum[spanFrom]
	// energy over the span with segments [gFrom, gTo) glitched
	energyWith := func(gFrom, gTo int) float64 {
		e := 0.0
		for s := spanFrom; s < spanTo; s++ {
			inc := raw[s+1] - raw[s]
			if (s >= gFrom && s < gTo) || inc < 0 {
				inc = d.cum[s+1] - d.cum[s]
			}
			e += inc
		}
		return e
	}
	tol := 1e-9 * max(1, math.Abs(trapz))
	kind, from, to = GlitchReset, j, j+1
	best := math.Abs(energyWith(j, j+1) - trapz)
	if k >= 0 {
		if e := math.Abs(energyWith(j, k) - trapz); e < best-tol {
			kind, from, to, best = GlitchBackward, j, k, e
		}
	}
	if i >= 0 {
		if e := math.Abs(energyWith(i, j+1) - trapz); e < best-tol {
			kind, from, to = GlitchSpike, i, j+1
		}
	}
	return kind, from, to
}

// powerAt interpolates the power at x inside segment i.
func (d *powerSeries) powerAt(i int, x float64) float64 { return d.interp(d.p, i, x) }

// counterAt interpolates the (reset-corrected) counter at x inside segment i.
func (d *powerSeries) counterAt(i int, x float64) float64 { return d.interp(d.e, i, x) }

// interp interpolates v (sampled at d.t) at x inside segment i: exactly
// v[i] or v[i+1] at the segment's ends.
func (d *powerSeries) interp(v []float64, i int, x float64) float64 {
	if i+1 >= len(d.t) || x == d.t[i] {
		return v[i]
	}
	if x == d.t[i+1] {
		return v[i+1]
	}
	f := (x - d.t[i]) / (d.t[i+1] - d.t[i])
	return v[i] + (v[i+1]-v[i])*f
}

// trapzSeg integrates power over [a, b], with a in segment ia and b in
// segment ib (ia ≤ ib), pa and pb the powers interpolated there. Every term
// is a non-negative area, so the sum is too.
func (d *powerSeries) trapzSeg(ia int, a, pa float64, ib int, b, pb float64) float64 {
	if ia == ib {
		return (b - a) * (pa + pb) / 2
	}
	head := (d.t[ia+1] - a) * (pa + d.p[ia+1]) / 2
	mid := d.cum[ib] - d.cum[ia+1]
	tail := (b - d.t[ib]) * (d.p[ib] + pb) / 2
	return head + mid + tail
}

// energy on [a, b] for one device; a ≤ b already checked.
func (d *powerSeries) energy(a, b float64, useCounter bool) (float64, error) {
	if err := d.checkRange(a, b); err != nil {
		return 0, err
	}
	if useCounter && d.e == nil {
		return 0, fmt.Errorf("device %q has no energy counter on every sample", d.name)
	}
	if a == b {
		return 0, nil
	}
	ia, ib := d.loc(a), d.loc(b)
	if useCounter {
		return max(0, d.counterAt(ib, b)-d.counterAt(ia, a)), nil
	}
	return max(0, d.trapzSeg(ia, a, d.powerAt(ia, a), ib, b, d.powerAt(ib, b))), nil
}

// checkPieces checks that every device can give the energy of the pieces
// between bounds (sorted): its samples cover them, and it has a counter
// when useCounter.
func (p *PowerData) checkPieces(bounds []float64, useCounter bool) error {
	if len(bounds) < 2 {
		return nil
	}
	for _, d := range p.devs {
		if err := d.checkRange(bounds[0], bounds[len(bounds)-1]); err != nil {
			return err
		}
		if useCounter && d.e == nil {
			return fmt.Errorf("device %q has no energy counter on every sample", d.name)
		}
	}
	return nil
}

// piecesEnergy passes to each, in order, the energy (summed over devices)
// of the pieces [bounds[m], bounds[m+1]] for strictly increasing bounds
// (checked by checkPieces), with exactly the arithmetic of Energy, in
// O(len(bounds) + samples) by walking each device's segments with a cursor
// instead of a binary search per piece. each gets them a block at a time
// (the energy of pieces from, from+1, …), in one buffer that it must not
// keep: a run's hundreds of thousands of pieces never have their energy
// in memory all at once. A piece whose energy is not finite is an error,
// and each has then been given the blocks before it.
func (p *PowerData) piecesEnergy(bounds []float64, useCounter bool, each func(from int, energy []float64)) error {
	n := len(bounds) - 1
	if n < 1 {
		return nil
	}
	buf := make([]float64, min(n, piecesBlock))
	for from := 0; from < n; from += piecesBlock {
		to := min(from+piecesBlock, n)
		out := buf[:to-from]
		// Each piece's energy is summed over the devices in their order,
		// one piece after the other (sumPieces): every device's walk over
		// its samples moves on together, and each sum is written once.
		// Pieces [lo, hi) are summed on their own (the walks start at
		// bounds[lo] where they would have arrived), on up to GOMAXPROCS
		// parts in parallel.
		parts := max(1, min(runtime.GOMAXPROCS(0), len(out)/piecesMin))
		var wg sync.WaitGroup
		for i := range parts {
			lo, hi := from+i*len(out)/parts, from+(i+1)*len(out)/parts
			wg.Go(func() { p.sumPieces(bounds, useCounter, out[lo-from:hi-from], lo, hi) })
		}
		wg.Wait()
		for m, e := range out {
			if math.IsInf(e, 0) || math.IsNaN(e) {
				return fmt.Errorf("energy on [%s, %s]: result is %v", fmtT(bounds[from+m]), fmtT(bounds[from+m+1]), e)
			}
		}
		each(from, out)
	}
	return nil
}

// piecesBlock is how many pieces' energy piecesEnergy holds at once
// (512 KiB): enough for piecesMin pieces on each of several cores.
const piecesBlock = 1 << 16

// piecesMin is the fewest pieces worth a goroutine of piecesEnergy.
const piecesMin = 1 << 15

// sumPieces sets out[m-from] for the pieces m in [from, to): the energy on
// [bounds[m], bounds[m+1]] summed over the devices, in their order. Each
// device's walk over its samples starts at the segment holding
// bounds[from] (loc), where a walk from bounds[0] arrives.
func (p *PowerData) sumPieces(bounds []float64, useCounter bool, out []float64, from, to int) {
	type walk struct {
		j, prevJ int
		prevV    float64
	}
	walks := make([]walk, len(p.devs))
	for i, d := range p.devs {
		j := d.loc(bounds[from])
		walks[i] = walk{j: j, prevJ: j}
		if useCounter {
			walks[i].prevV = d.counterAt(j, bounds[from])
		} else {
			walks[i].prevV = d.powerAt(j, bounds[from])
		}
	}
	for m := from + 1; m <= to; m++ {
		x, prevX := bounds[m], bounds[m-1]
		sum := 0.0
		for i, d := range p.devs {
			w := &walks[i]
			j, n := w.j, len(d.t)
			for j+1 <= n-2 && d.t[j+1] <= x {
				j++
			}
			var v, e float64
			if useCounter {
				v = d.counterAt(j, x)
				e = max(0, v-w.prevV)
			} else {
				v = d.powerAt(j, x)
				e = max(0, d.trapzSeg(w.prevJ, prevX, w.prevV, j, x, v))
			}
			sum += e
			*w = walk{j: j, prevJ: j, prevV: v}
		}
		out[m-1-from] = sum
	}
}

// fmtT formats a time (Unix seconds) without exponent.
func fmtT(t float64) string {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return fmt.Sprint(t)
	}
	return strconv.FormatFloat(t, 'f', -1, 64)
}

// fmtNum formats a number compactly (for messages).
func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
