// Package plot draws one archived run with gonum/plot so that a person sees
// at a glance where the energy went: power over time per device and summed,
// the stages shaded and named, the steady-state window, the baseline ±
// tolerance band of the release stage; the engine's running batch, waiting
// queue and KV-cache usage from its /metrics under the power (engine.go),
// when the run scraped them; and per-request J/token in completion order
// with its rolling CV against the steady-state threshold.
package plot

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"

	"github.com/joulebench/joulebench/internal/num"
)

// DefaultTolerance is the release band when the run's parameters do not
// say.
const DefaultTolerance = 0.05

// XY is one point.
type XY struct{ X, Y float64 }

// Series is a named line.
type Series struct {
	Name   string
	Points []XY
}

// Band is a named interval on the x axis.
type Band struct {
	Name       string
	Start, End float64
	// Level is how many other bands contain this one (0 = top level); a
	// nested band's label goes one row lower.
	Level int
}

// BaselineBand is a device's baseline ± tolerance, drawn over [Start, End].
type BaselineBand struct {
	Device           string
	Baseline, Lo, Hi float64
	Start, End       float64
}

// Data is what the figure shows. Times are seconds since T0.
type Data struct {
	RunID     string
	Title     string
	Simulated bool
	// Boundary names what the power drawn covers: the domains of its
	// devices ("GPU", "node", "GPU + CPU + DRAM"); never GPU for power
	// that is not a GPU's.
	Boundary string
	// T0 is the Unix time of x = 0 (the run's start).
	T0 float64
	// Devices is each device's power; Total the sum over devices.
	Devices []Series
	Total   Series
	Stages  []Band
	// Steady is the steady-state window in seconds; nil when none.
	Steady *Band
	// Baselines are per device; TotalBaseline is their sum. Empty when the
	// run has no baseline or release stage.
	Baselines     []BaselineBand
	TotalBaseline *BaselineBand
	Tolerance     float64

	// JPerToken is per-request J/token in completion order: X is the
	// request's 1-based number among the successful formal requests.
	JPerToken []XY
	// CV is the rolling CV over Window consecutive J/token values, at the
	// number of the window's last request.
	CV []XY
	// CVMax is the threshold the steady-state search used (its result's
	// cv_max); 0 when the results hold no steady-state search.
	CVMax float64
	// Window is the rolling window used: the steady-state search's (its
	// result's window, the run's parameter as its profile passed it), or
	// fewer when there are fewer requests; 0 when the results hold no
	// steady-state search.
	Window int
	// SteadyFirst and SteadyLast are the request numbers of the
	// steady-state window; 0 when none.
	SteadyFirst, SteadyLast int

	// Engine is the engine's state from /metrics (engine.go); empty when
	// the run has no scrapes.
	Engine EnginePanel

	// Notes say what could not be drawn and why.
	Notes []string
}

// maxPoints bounds the points drawn per power line; longer series keep the
// minimum and maximum of each bucket (spikes survive).
const maxPoints = 3000

// Prepare computes the figure's data from an archived run and its evaluated
// results (res may be nil: no steady-state window is marked then).
func Prepare(run *record.Run, res *record.Results) (*Data, error) {
	if run == nil {
		return nil, fmt.Errorf("plot: no run")
	}
	m := run.Meta
	d := &Data{
		RunID:     m.RunID,
		Simulated: m.Simulated,
		Tolerance: paramFloat(m.Parameters, "release_tolerance", DefaultTolerance),
	}
	d.Title = fmt.Sprintf("run %s · %s · %s", m.RunID, orDash(m.Engine.Kind), orDash(m.Engine.Model))
	switch {
	case m.PowerReplayed():
		// Real power from another recording, not simulated, and not
		// measured in this run.
		prefix := "REPLAYED POWER · "
		if m.SimulatedEngine() {
			prefix = "SIMULATED ENGINE · " + prefix
		}
		d.Title = prefix + d.Title
	case m.Simulated:
		if hw := m.SimHardware(); hw != "" {
			d.Title = "SIMULATED (" + hw + ") · " + d.Title
		} else {
			d.Title = "SIMULATED · " + d.Title
		}
	}
	method := measure.MethodAuto
	if s, ok := m.Parameters["formal_energy_method"].(string); ok && s != "" {
		method = s
	}

	var pd *measure.PowerData
	if len(run.Power) > 0 {
		var err error
		if pd, err = measure.NewPowerData(run.Power); err != nil {
			return nil, fmt.Errorf("%s: power.csv: %w", run.Dir, err)
		}
	}
	d.T0 = t0(m, pd)
	d.stages(m)
	if pd == nil {
		d.Notes = append(d.Notes, "no power samples")
	} else {
		d.power(run.Power, pd)
		d.Boundary = boundary(m.Hardware.Devices, pd.Devices())
		d.baselines(m, pd)
	}
	window := d.steady(res)
	d.engine(run.EngineMetrics)
	if pd != nil {
		d.requests(run, pd, window, method)
	}
	return d, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func paramFloat(params map[string]any, name string, def float64) float64 {
	if v, ok := num.Positive(params[name]); ok {
		return v
	}
	return def
}

// t0 is the run's start: started_at when it lies within a day of the data,
// else the earliest stage or sample.
func t0(m record.Meta, pd *measure.PowerData) float64 {
	first := math.Inf(1)
	for _, s := range m.Stages {
		first = min(first, s.Start)
	}
	if pd != nil {
		a, _ := pd.Span()
		first = min(first, a)
	}
	if math.IsInf(first, 1) {
		return m.StartedAt
	}
	if m.StartedAt != 0 && math.Abs(m.StartedAt-first) < 86400 {
		return min(m.StartedAt, first)
	}
	return first
}

// stages converts the run's stages to bands, with their nesting level.
func (d *Data) stages(m record.Meta) {
	for _, s := range m.Stages {
		if math.IsNaN(s.Start) || math.IsNaN(s.End) || s.End < s.Start {
			d.Notes = append(d.Notes, fmt.Sprintf("stage %s has an invalid interval", s.Name))
			continue
		}
		d.Stages = append(d.Stages, Band{Name: s.Name, Start: s.Start - d.T0, End: s.End - d.T0})
	}
	// In time order, a stage before the stages inside it.
	slices.SortStableFunc(d.Stages, func(a, b Band) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End))
	})
	for i := range d.Stages {
		a := &d.Stages[i]
		for j, b := range d.Stages {
			if i != j && b.Start <= a.Start && a.End <= b.End && (b.End-b.Start > a.End-a.Start || j < i) {
				a.Level++
			}
		}
	}
}

// power builds the per-device lines and their sum.
func (d *Data) power(samples []record.PowerSample, pd *measure.PowerData) {
	by := map[string][]XY{}
	for _, s := range samples {
		by[s.Device] = append(by[s.Device], XY{s.T, s.PowerW})
	}
	devs := pd.Devices()
	var times []float64
	series := make([][]XY, len(devs))
	for i, dev := range devs {
		pts := by[dev]
		slices.SortStableFunc(pts, func(a, b XY) int { return cmp.Compare(a.X, b.X) })
		series[i] = pts
		for _, p := range pts {
			times = append(times, p.X)
		}
		shifted := make([]XY, len(pts))
		for k, p := range pts {
			shifted[k] = XY{p.X - d.T0, p.Y}
		}
		d.Devices = append(d.Devices, Series{Name: dev, Points: decimate(shifted, maxPoints)})
	}
	// The sum at every sample time covered by all devices, each device
	// linearly interpolated between its samples.
	slices.Sort(times)
	times = slices.Compact(times)
	lo, hi := math.Inf(-1), math.Inf(1)
	for _, s := range series {
		lo, hi = max(lo, s[0].X), min(hi, s[len(s)-1].X)
	}
	var total []XY
	cursor := make([]int, len(series))
	for _, t := range times {
		if t < lo || t > hi {
			continue
		}
		sum := 0.0
		for i, s := range series {
			for cursor[i]+1 < len(s)-1 && s[cursor[i]+1].X <= t {
				cursor[i]++
			}
			sum += interp(s, cursor[i], t)
		}
		total = append(total, XY{t - d.T0, sum})
	}
	name := "all devices"
	if len(devs) == 1 {
		name = "total"
	}
	d.Total = Series{Name: name, Points: decimate(total, maxPoints)}
}

// interp is s's value at t, with s[i].X ≤ t ≤ s[i+1].X (or the last point).
func interp(s []XY, i int, t float64) float64 {
	if i+1 >= len(s) || t <= s[i].X {
		return s[i].Y
	}
	a, b := s[i], s[i+1]
	if t >= b.X {
		return b.Y
	}
	return a.Y + (b.Y-a.Y)*(t-a.X)/(b.X-a.X)
}

// decimate keeps at most about n points: the first and last, and the
// minimum and maximum of each bucket in time order.
func decimate(pts []XY, n int) []XY {
	if len(pts) <= n || n < 4 {
		return pts
	}
	buckets := n / 2
	out := make([]XY, 0, n+2)
	size := float64(len(pts)) / float64(buckets)
	for b := range buckets {
		lo, hi := int(float64(b)*size), int(float64(b+1)*size)
		hi = min(max(hi, lo+1), len(pts))
		iMin, iMax := lo, lo
		for i := lo; i < hi; i++ {
			if pts[i].Y < pts[iMin].Y {
				iMin = i
			}
			if pts[i].Y > pts[iMax].Y {
				iMax = i
			}
		}
		if iMin > iMax {
			iMin, iMax = iMax, iMin
		}
		out = append(out, pts[iMin])
		if iMax != iMin {
			out = append(out, pts[iMax])
		}
	}
	if out[0] != pts[0] {
		out = append([]XY{pts[0]}, out...)
	}
	if out[len(out)-1] != pts[len(pts)-1] {
		out = append(out, pts[len(pts)-1])
	}
	return out
}

// baselines computes each device's baseline (mean power over the baseline
// stage) and its ± tolerance band over the release stage.
func (d *Data) baselines(m record.Meta, pd *measure.PowerData) {
	bs, okB := m.StageByName("baseline")
	rs, okR := m.StageByName("release")
	switch {
	case !okB && !okR:
		d.Notes = append(d.Notes, "no baseline or release stage: no baseline ± tolerance band")
		return
	case !okB:
		d.Notes = append(d.Notes, "no baseline stage: no baseline ± tolerance band over the release")
		return
	case !okR:
		// The baseline stage is there (and shaded); the band belongs to
		// the release stage, which is not.
		d.Notes = append(d.Notes, "no release stage: the baseline ± tolerance band (drawn over the release) is not drawn")
		return
	}
	total := BaselineBand{Device: "all devices", Start: rs.Start - d.T0, End: rs.End - d.T0}
	for _, dev := range pd.Devices() {
		w, err := pd.MeanPower(dev, bs.Start, bs.End)
		if err != nil {
			d.Notes = append(d.Notes, fmt.Sprintf("baseline of %s: %v", dev, err))
			d.Baselines = nil
			return
		}
		d.Baselines = append(d.Baselines, BaselineBand{Device: dev, Baseline: w, Lo: w * (1 - d.Tolerance), Hi: w * (1 + d.Tolerance),
			Start: total.Start, End: total.End})
		total.Baseline += w
	}
	total.Lo, total.Hi = total.Baseline*(1-d.Tolerance), total.Baseline*(1+d.Tolerance)
	d.TotalBaseline = &total
}

// steady reads the steady-state window from the results: the
// steady_window_* metrics (benchmark-1.5), else any evaluated value shaped
// as the steady_state() built-in returns it (reached, start, end,
// start_index, end_index), such as benchmark-1.0's derived value steady,
// so that the window is drawn for every profile that searches for it.
// The search's window and cv_max come from its result, the values the
// run's profile searched with (its archived parameters): it returns the
// window and sets CVMax, 0 and 0 when the results hold no search.
func (d *Data) steady(res *record.Results) (window int) {
	if res == nil {
		d.Notes = append(d.Notes, "run not evaluated: no steady-state window")
		return 0
	}
	sv, _, found := steadyValue(res)
	if found && sv.window >= 2 && sv.cvMax > 0 {
		window, d.CVMax = sv.window, sv.cvMax
	}
	start, ok1 := resultNumber(res, "steady_window_start")
	end, ok2 := resultNumber(res, "steady_window_end")
	first, okF := resultNumber(res, "steady_window_first_request")
	last, okL := resultNumber(res, "steady_window_last_request")
	reason := ""
	if !ok1 || !ok2 {
		if w, why, found := steadyValue(res); found {
			start, end, ok1, ok2 = w.start, w.end, w.reached, w.reached
			first, last, okF, okL = w.first, w.last, w.reached, w.reached
			reason = why
		}
	}
	if ok1 && ok2 && end >= start {
		d.Steady = &Band{Name: "steady state", Start: start - d.T0, End: end - d.T0}
	} else {
		if reason == "" {
			reason = "no steady-state window in the results"
			if r, ok := res.Values["steady_window_start"]; ok && r.Note != "" {
				reason = "no steady-state window: " + strings.TrimPrefix(r.Note, "not applicable: ")
			}
		}
		d.Notes = append(d.Notes, reason)
	}
	if okF {
		d.SteadyFirst = int(first)
	}
	if okL {
		d.SteadyLast = int(last)
	}
	return window
}

// steadyWindow is a steady_state() result found among the values.
type steadyWindow struct {
	reached                 bool
	start, end, first, last float64
	// window and cvMax are what the search used; 0 when the result does
	// not say.
	window int
	cvMax  float64
}

// steadyValue finds a value shaped as a steady_state() result, preferring
// one named "steady"; why is the note when it was not reached.
func steadyValue(res *record.Results) (w steadyWindow, why string, found bool) {
	names := append([]string{"steady"}, res.Order...)
	for _, n := range names {
		r, ok := res.Values[n]
		if !ok {
			continue
		}
		m, ok := r.Value.(map[string]any)
		if !ok {
			continue
		}
		reached, ok := m["reached"].(bool)
		if !ok {
			continue
		}
		field := func(k string) (float64, bool) { return num.Finite(m[k]) }
		s, ok1 := field("start")
		e, ok2 := field("end")
		if !ok1 || !ok2 {
			continue
		}
		w = steadyWindow{reached: reached, start: s, end: e}
		w.first, _ = field("start_index")
		w.last, _ = field("end_index")
		if win, ok := field("window"); ok && win == math.Trunc(win) && win >= 2 && win <= math.MaxInt32 {
			w.window = int(win)
		}
		if cv, ok := field("cv_max"); ok && cv > 0 {
			w.cvMax = cv
		}
		if !reached {
			why = "no steady-state window"
			if rs, _ := m["reason"].(string); rs != "" {
				why += ": " + rs
			}
		}
		return w, why, true
	}
	return w, "", false
}

func resultNumber(res *record.Results, name string) (float64, bool) {
	r, ok := res.Values[name]
	if !ok {
		return 0, false
	}
	return num.Finite(r.Value)
}

// requests computes per-request J/token of the successful formal requests
// in completion order, and the rolling CV.
func (d *Data) requests(run *record.Run, pd *measure.PowerData, window int, method string) {
	var reqs []*record.Request
	synthetic := 0
	for i := range run.Requests {
		r := &run.Requests[i]
		switch {
		case r.Phase != "formal" || !r.OK:
		case r.Synthetic:
			// An imported recording's request stands for the window: it
			// has no times or J/token of its own.
			synthetic++
		default:
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		if synthetic > 0 || len(run.Requests) == 0 && onlyFormalStage(run.Meta) {
			d.Notes = append(d.Notes, "no per-request data (an imported recording): no request panels")
		} else {
			d.Notes = append(d.Notes, "no successful formal requests")
		}
		return
	}
	slices.SortStableFunc(reqs, func(a, b *record.Request) int {
		return cmp.Or(cmp.Compare(a.DoneAt, b.DoneAt), strings.Compare(a.ID, b.ID))
	})
	att, err := pd.Attribute(reqs, method)
	if err != nil {
		d.Notes = append(d.Notes, "per-request J/token: "+err.Error())
		return
	}
	var xs []float64
	for i, r := range reqs {
		if r.OutputTokens <= 0 || !(r.DoneAt > r.FirstTokenAt) {
			continue // no generation interval: no J/token (as in the steady-state search)
		}
		d.JPerToken = append(d.JPerToken, XY{float64(i + 1), att[i].JPerToken})
		xs = append(xs, att[i].JPerToken)
	}
	if window < 2 {
		d.Notes = append(d.Notes, "no steady-state search in the results: no rolling CV (its window and cv_max are the search's)")
		return
	}
	d.Window = min(window, len(xs))
	if d.Window < 2 {
		d.Notes = append(d.Notes, "fewer than 2 requests with a J/token: no rolling CV")
		return
	}
	for s := 0; s+d.Window <= len(xs); s++ {
		cv, err := measure.CV(xs[s : s+d.Window])
		if err != nil {
			continue // a window whose mean is 0 has no CV
		}
		d.CV = append(d.CV, XY{d.JPerToken[s+d.Window-1].X, cv})
	}
}

// onlyFormalStage reports whether the run's only stage is formal (an
// imported recording).
func onlyFormalStage(m record.Meta) bool {
	for _, s := range m.Stages {
		if s.Name != "formal" {
			return false
		}
	}
	return len(m.Stages) > 0
}

// boundary names the domains of the devices drawn, in record.Domains
// order; a device run.json does not describe is a GPU (format v1's
// default).
func boundary(described []record.Device, drawn []string) string {
	dom := map[string]string{}
	for _, dv := range described {
		dom[dv.ID] = dv.DomainOrGPU()
	}
	seen := map[string]bool{}
	for _, id := range drawn {
		if d, ok := dom[id]; ok {
			seen[d] = true
		} else {
			seen[record.DomainGPU] = true
		}
	}
	var names []string
	for _, d := range record.Domains {
		if seen[d] {
			if d != record.DomainNode {
				d = strings.ToUpper(d)
			}
			names = append(names, d)
		}
	}
	return strings.Join(names, " + ")
}
