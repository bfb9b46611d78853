package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Latency metrics a frontier can be drawn against (profile metric names).
var LatencyMetrics = []string{"tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "ttft_p90_ms", "ttft_p99_ms", "e2e_latency_p90_ms", "e2e_latency_p99_ms"}

// DefaultLatency is the frontier's latency unless the user picks another.
const DefaultLatency = "tpot_p50_ms"

// J/token bases of a frontier point.
const (
	BasisSteady   = "steady_state" // steady-state window, where reached
	BasisFormal   = "formal"       // the formal window otherwise
	BasisGoodTok  = "good_token"   // j_per_good_token under an SLO
	BasisGoodTokS = "good_token_steady"
)

// FrontierOptions choose the frontier's latency and the SLO a point must
// meet to be "lowest J/token meeting the SLO", and what the decision
// minimises.
type FrontierOptions struct {
	// Latency is one of LatencyMetrics ("": the SLO's own metric where the
	// runs carry one (SLO.LatencyMetric), else DefaultLatency).
	Latency string
	// LatencyMax, when above 0, is a bound on Latency a point must meet.
	LatencyMax float64
	// Attainment is the slo_attainment a point must reach where its run
	// has one (0: the run's own slo_attainment_target, else 0.99).
	Attainment float64
	// Objective is what the decision minimises: one of Objectives (""
	// j_per_token).
	Objective string
}

// CheckLatency validates a --latency choice.
func CheckLatency(name string) error {
	if name == "" || slices.Contains(LatencyMetrics, name) {
		return nil
	}
	return fmt.Errorf("latency %q: valid are %s", name, strings.Join(LatencyMetrics, ", "))
}

// FrontierPoint is one load point of a configuration's energy–latency
// frontier (per model × engine × scenario × configuration).
type FrontierPoint struct {
	Model    string `json:"model"`
	Engine   string `json:"engine"`
	Scenario string `json:"scenario"`
	// Configuration is the configuration's values of the fields that
	// differ between runs of the same scenario, model and engine.
	Configuration []FieldValue `json:"configuration,omitempty"`
	// Load is the point's load parameters (mode, concurrency, rate, ...).
	Load map[string]any `json:"load"`
	// GPUSetting is the point's GPU setting (its first run's); Label names
	// the point in every view, "c32 · 250 W" (PointLabel).
	GPUSetting GPUSetting `json:"gpu_setting"`
	Label      string     `json:"label"`
	// RunID is the point's run (the first of its repetitions); Runs counts
	// them (values are their medians).
	RunID string `json:"run_id"`
	Dir   string `json:"dir"`
	Runs  int    `json:"runs"`
	// JPerToken is the point's J/token on Basis.
	JPerToken     *float64 `json:"j_per_token"`
	Basis         string   `json:"basis"`
	FullJPerToken *float64 `json:"full_j_per_token"`
	LatencyMetric string   `json:"latency_metric"`
	// LatencyFrom says where LatencyMetric comes from: "--latency", "the
	// SLO" or "default".
	LatencyFrom string `json:"latency_from"`
	// LatencyNote says why the latency is not the percentile the SLO's
	// target implies (its results lack it); empty otherwise.
	LatencyNote string   `json:"latency_note,omitempty"`
	Latency     *float64 `json:"latency"`
	// LatencyBound is the bound on LatencyMetric: --latency-max, else the
	// SLO's bound when LatencyMetric is its metric; nil when none.
	LatencyBound *float64 `json:"latency_bound,omitempty"`
	// ThroughputTokS and GoodputTokS are the point's output throughput and
	// goodput (tokens of the requests that meet the SLO) per second.
	ThroughputTokS *float64 `json:"throughput_tok_s"`
	GoodputTokS    *float64 `json:"goodput_tok_s"`
	// Pareto: no other point of the frontier has both lower-or-equal
	// J/token and latency, one of them strictly lower.
	Pareto bool `json:"pareto"`
	// SLO is the SLO the point's runs carry (their slo_* parameters);
	// nil when none.
	SLO *SLO `json:"slo,omitempty"`
	// SLOAttainment is the run's slo_attainment, where it has one.
	SLOAttainment *float64 `json:"slo_attainment,omitempty"`
	// AttainmentTarget is the attainment the point must reach.
	AttainmentTarget float64 `json:"attainment_target,omitempty"`
	// MeetsSLO is nil when no SLO applies (no --latency-max, no SLO in the
	// runs, no slo_attainment).
	MeetsSLO *bool `json:"meets_slo,omitempty"`
	// Chosen marks the decision's choice (decision.run): the only point
	// any view singles out. LowestMeetingSLO is Chosen under an SLO: the
	// lowest J/token, on the decision's basis, of the points meeting it
	// over every configuration decided together.
	Chosen           bool `json:"chosen"`
	LowestMeetingSLO bool `json:"lowest_meeting_slo"`
	// BasisNote, the same on every point of a frontier, says why its
	// basis is the formal window although some of its loads reached
	// steady state (the loads that did not); empty otherwise.
	BasisNote string `json:"basis_note,omitempty"`
	// group keys the frontier the point belongs to.
	group string
	// js are the medians by basis, objs of the other objectives.
	js, objs map[string]*float64
	// rows are the point's runs.
	rows []*RunRow
	// invalid names, by basis or objective, the failed checks that
	// invalidate the point's figure (it is then nil).
	invalid map[string]string
	// method is the point's runs' method.
	method method
	// runVals are its runs' values by basis and objective metric (nil
	// where a run has none), for their interval.
	runVals map[string][]*float64
	// runWindows are its runs' steady windows' J/token (nil where a
	// run has none), in the order of runVals, for batch means.
	runWindows [][]float64
	// dec is the decision the point was decided in (nil: none, a point
	// without an SLO where others have one).
	dec *Decision
}

// frontier builds the frontier points of the included runs: one point per
// load of each configuration that was measured at two loads or more.
func (p *Profile) frontier(points []FrontierPoint) []FrontierPoint {
	loads := map[string]int{}
	for _, pt := range points {
		if len(pt.Load) > 0 {
			loads[pt.group]++
		}
	}
	var out []FrontierPoint
	for _, pt := range points {
		if loads[pt.group] >= 2 && len(pt.Load) > 0 {
			out = append(out, pt)
		}
	}
	markFrontier(out)
	return out
}

// loadPoints are the points of every included run: one per configuration
// and load (repetitions as medians), each configuration's points on one
// J/token basis (the first of frontierBases every run of it has), against
// its latency metric (the one asked for, else its SLO's, else the
// default).
func (p *Profile) loadPoints(rows []RunRow, runs []Run, o FrontierOptions) []FrontierPoint {
	byDir := map[string]*Run{}
	for i := range runs {
		byDir[runs[i].Dir] = &runs[i]
	}
	points := map[key]*FrontierPoint{}
	samples := map[key][]sample{}
	var order []key
	for i := range rows {
		r := &rows[i]
		run := byDir[r.Dir]
		if !r.Included || run == nil {
			continue
		}
		k := key{r.Scenario + "\x00" + r.Model + "\x00" + r.Engine + "\x00" + mapKey(r.setting) + "\x00" + r.method.key, mapKey(r.load)}
		pt, ok := points[k]
		if !ok {
			pt = newLoadPoint(r, run, o)
			pt.group = k.group
			points[k] = pt
			order = append(order, k)
		}
		pt.Runs++
		pt.rows = append(pt.rows, r)
		full := r.FullJPerToken
		if !r.Uses(ValueFull) {
			full = nil
		}
		js, bad := frontierJs(r, run)
		obj := map[string]*float64{}
		for _, name := range objectiveMetrics() {
			obj[name] = ptr(numberOK(run, name))
			if checks := invalidating(run, name); len(checks) > 0 {
				obj[name], bad[name] = nil, checks
			}
		}
		if checks := invalidating(run, "slo_attainment"); checks != "" {
			bad["slo_attainment"] = checks // the SLO verdict rests on it
		}
		samples[k] = append(samples[k], sample{run: r.RunID, j: js, windows: steadyWindows(run, js[BasisSteady]), bad: bad, obj: obj, full: full, lat: ptr(numberOK(run, pt.LatencyMetric)),
			thr: ptr(numberOK(run, "output_throughput_tok_s")), good: ptr(numberOK(run, "goodput_tok_s")), att: ptr(numberOK(run, "slo_attainment"))})
	}
	basis := sharedBasis(order, samples)
	notes := formalBasisNotes(order, samples, basis, points)
	out := make([]FrontierPoint, 0, len(order))
	for _, k := range order {
		pt := points[k]
		pt.Basis = orStr(basis[k.group], BasisFormal)
		pt.BasisNote = notes[k.group]
		col := func(get func(sample) *float64) *float64 {
			var xs []*float64
			for _, s := range samples[k] {
				xs = append(xs, get(s))
			}
			return medianOf(xs)
		}
		pt.js, pt.objs, pt.invalid = map[string]*float64{}, map[string]*float64{}, map[string]string{}
		for _, b := range frontierBases {
			pt.js[b] = col(func(s sample) *float64 { return s.j[b] })
		}
		for _, name := range objectiveMetrics() {
			pt.objs[name] = col(func(s sample) *float64 { return s.obj[name] })
		}
		pt.runVals, pt.runWindows = runValues(samples[k])
		pt.JPerToken, pt.FullJPerToken, pt.Latency = pt.js[pt.Basis], col(func(s sample) *float64 { return s.full }), col(func(s sample) *float64 { return s.lat })
		pt.ThroughputTokS, pt.GoodputTokS, pt.SLOAttainment = col(func(s sample) *float64 { return s.thr }), col(func(s sample) *float64 { return s.good }), col(func(s sample) *float64 { return s.att })
		pt.dropInvalid(samples[k])
		pt.MeetsSLO = meetsSLO(pt, o)
		out = append(out, *pt)
	}
	return out
}

// key is a load point: its configuration (group) and load.
type key struct{ group, load string }

// sample is one run's figures at a load point.
type sample struct {
	j, obj                    map[string]*float64 // J/token by basis; other objectives
	full, lat, thr, good, att *float64
	run                       string
	windows                   []float64 // the steady windows' J/token (steadyWindows)
	// bad names, by basis or objective, the failed checks of the run
	// that invalidate that figure (its value is then nil).
	bad map[string]string
}

// dropInvalid takes out of the point every figure (basis, objective or
// slo_attainment) that a check of one of its runs invalidates: the
// point has none on it, not the median of its other runs, and invalid
// says which check.
func (pt *FrontierPoint) dropInvalid(samples []sample) {
	for _, s := range samples {
		for name, checks := range s.bad {
			if _, seen := pt.invalid[name]; seen {
				continue
			}
			why := checks
			if len(samples) > 1 {
				why += " on run " + s.run
			}
			pt.invalid[name] = why
			if _, ok := pt.js[name]; ok {
				pt.js[name] = nil
			}
			if _, ok := pt.objs[name]; ok {
				pt.objs[name] = nil
			}
			if name == "slo_attainment" {
				pt.SLOAttainment = nil
			}
		}
	}
}

// sharedBasis gives each configuration's points one basis: the first of
// frontierBases every run of it has.
func sharedBasis(order []key, samples map[key][]sample) map[string]string {
	basis := map[string]string{}
	for _, b := range frontierBases {
		for _, k := range order {
			if _, done := basis[k.group]; done {
				continue
			}
			all := true
			for _, k2 := range order {
				if k2.group != k.group {
					continue
				}
				for _, s := range samples[k2] {
					all = all && s.j[b] != nil
				}
			}
			if all {
				basis[k.group] = b
			}
		}
	}
	return basis
}

// formalBasisNotes: a configuration on the formal window although some of
// its loads reached steady state says which did not, once.
func formalBasisNotes(order []key, samples map[key][]sample, basis map[string]string, points map[key]*FrontierPoint) map[string]string {
	notes := map[string]string{}
	var groups []string
	for _, k := range order {
		if !slices.Contains(groups, k.group) {
			groups = append(groups, k.group)
		}
	}
	for _, g := range groups {
		if basis[g] != BasisFormal && basis[g] != "" {
			continue
		}
		var missing []string
		some, n := false, 0
		for _, k := range order {
			if k.group != g {
				continue
			}
			n++
			steady := true
			for _, s := range samples[k] {
				steady = steady && s.j[BasisSteady] != nil
			}
			if steady {
				some = true
			} else {
				missing = append(missing, LoadText(points[k].Load))
			}
		}
		if some && len(missing) > 0 {
			notes[g] = fmt.Sprintf("J/token on the formal window at every load: %d of %d loads did not reach steady state (%s; fewer successful requests than window × min_windows, or no window set under cv_max), so steady-state J/token cannot be compared along this frontier",
				len(missing), n, strings.Join(missing, ", "))
		}
	}
	return notes
}

// newLoadPoint starts the point of run r's configuration and load: its
// SLO (the run's parameters), latency metric (the one asked for, else the
// SLO's, else the default), attainment target (asked for, else the SLO's,
// else 0.99) and bound on that latency (--latency-max, else the SLO's
// when the metric is its own).
func newLoadPoint(r *RunRow, run *Run, o FrontierOptions) *FrontierPoint {
	slo := SLOOf(run.Meta)
	target := o.Attainment
	if target <= 0 {
		target = 0.99
		if slo != nil {
			target = slo.Attainment
		}
	}
	if slo != nil {
		slo = slo.withTarget(target)
	}
	metric, from, note := o.Latency, "--latency", ""
	switch {
	case metric != "":
	case slo != nil:
		metric, from = slo.LatencyMetric(), "the SLO"
		metric, note = availableLatency(run, metric)
	default:
		metric, from = DefaultLatency, "default"
	}
	pt := &FrontierPoint{Model: r.Model, Engine: r.Engine, Scenario: r.Scenario, Configuration: r.Configuration,
		Load: loadParams(r.load), RunID: r.RunID, Dir: r.Dir, LatencyMetric: metric, LatencyFrom: from, LatencyNote: note, SLO: slo, method: r.method,
		GPUSetting: r.GPUSetting, Label: r.Label, AttainmentTarget: target}
	switch {
	case o.LatencyMax > 0:
		pt.LatencyBound = &o.LatencyMax
	case slo != nil && slo.LatencyMetric() == metric:
		b := slo.Bound()
		pt.LatencyBound = &b
	case slo != nil && from == "the SLO":
		b := slo.Bound() // a higher percentile than the target's, named so (LatencyNote)
		pt.LatencyBound = &b
	}
	return pt
}

// availableLatency is metric when the run's results have it, else the
// next higher percentile of the same latency they have (p99 for a p95 the
// profile does not compute: a stricter reading, said in note).
func availableLatency(run *Run, metric string) (string, string) {
	if _, ok := numberOK(run, metric); ok || run.Results == nil {
		return metric, ""
	}
	base, pctl, ok := splitLatency(metric)
	if !ok {
		return metric, ""
	}
	for _, q := range []float64{90, 99, 99.9} {
		if q <= pctl {
			continue
		}
		alt := base + "_p" + strconv.FormatFloat(q, 'f', -1, 64) + "_ms"
		if _, ok := numberOK(run, alt); ok {
			return alt, fmt.Sprintf("%s is not in the results: %s, a higher percentile, is held to the bound instead (stricter than the target)", metric, alt)
		}
	}
	return metric, ""
}

// splitLatency reads "tpot_p95_ms" as ("tpot", 95).
func splitLatency(metric string) (string, float64, bool) {
	i := strings.LastIndex(metric, "_p")
	if i < 0 || !strings.HasSuffix(metric, "_ms") {
		return "", 0, false
	}
	q, err := strconv.ParseFloat(metric[i+2:len(metric)-3], 64)
	return metric[:i], q, err == nil
}

// frontierBases are the J/token bases of a frontier in order of
// preference: under an SLO the good tokens' (steady window first), else
// steady-state, else the formal window.
var frontierBases = []string{BasisGoodTokS, BasisGoodTok, BasisSteady, BasisFormal}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// basisMetrics are the metrics of the J/token bases read from the
// results (steady state comes from the run's row, its flags applied).
var basisMetrics = map[string]string{BasisGoodTokS: "j_per_good_token_steady", BasisGoodTok: "j_per_good_token", BasisFormal: "formal_j_per_token"}

// frontierJs are a run's J/token values by basis (absent: nil): steady
// state only where reached and in the statistics; a figure that a failed
// check of the run invalidates (its declaration, record.Result.Invalidated)
// is nil, and bad names the checks by basis.
func frontierJs(r *RunRow, run *Run) (js map[string]*float64, bad map[string]string) {
	js, bad = map[string]*float64{}, map[string]string{}
	for b, metric := range basisMetrics {
		js[b] = ptr(numberOK(run, metric))
		if checks := invalidating(run, metric); len(checks) > 0 {
			js[b], bad[b] = nil, checks
		}
	}
	if r.SteadyJPerToken != nil && r.Uses(ValueSteady) {
		js[BasisSteady] = r.SteadyJPerToken
	}
	return js, bad
}

// invalidating names the failed checks of run whose declaration
// invalidates metric ("check a, check b"; "" when none does).
func invalidating(run *Run, metric string) string {
	if run.Results == nil {
		return ""
	}
	var out []string
	for _, name := range run.Results.Order {
		if c := run.Results.Values[name]; checkFailed(c) && c.InvalidatesMetric(metric) {
			out = append(out, "check "+name)
		}
	}
	return strings.Join(out, ", ")
}

func numberOK(run *Run, name string) (float64, bool) {
	v, ok, _ := number(run.Results, name)
	return v, ok
}

func meetsSLO(pt *FrontierPoint, o FrontierOptions) *bool {
	if o.LatencyMax <= 0 && pt.SLOAttainment == nil && pt.SLO == nil {
		return nil
	}
	ok := true
	if o.LatencyMax > 0 {
		ok = pt.Latency != nil && *pt.Latency <= o.LatencyMax
	}
	switch {
	case pt.SLOAttainment != nil:
		ok = ok && *pt.SLOAttainment >= pt.AttainmentTarget
	case pt.SLO != nil:
		ok = false // an SLO, and no attainment to show it is met
	}
	return &ok
}

// markFrontier sorts each frontier's points by latency and marks the
// Pareto-optimal ones, on the J/token the decision compares them on (the
// decision marked its choice).
func markFrontier(pts []FrontierPoint) {
	slices.SortStableFunc(pts, func(a, b FrontierPoint) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmpPtr(a.Latency, b.Latency), cmpPtr(a.JPerToken, b.JPerToken))
	})
	for i := range pts {
		a := &pts[i]
		if a.JPerToken == nil || a.Latency == nil {
			continue
		}
		a.Pareto = true
		for j := range pts {
			b := &pts[j]
			if i == j || b.group != a.group || b.JPerToken == nil || b.Latency == nil {
				continue
			}
			if *b.JPerToken <= *a.JPerToken && *b.Latency <= *a.Latency && (*b.JPerToken < *a.JPerToken || *b.Latency < *a.Latency) {
				a.Pareto = false
				break
			}
		}
	}
}

// cmpPtr orders nil last.
func cmpPtr(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}

func medianOf(xs []*float64) *float64 {
	var v []float64
	for _, x := range xs {
		if x != nil {
			v = append(v, *x)
		}
	}
	if len(v) == 0 {
		return nil
	}
	sort.Float64s(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return &m
}

func mapKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + "\x00")
	}
	return b.String()
}

// loadParams turns the load fields (canonical JSON by dotted path) into
// the load's parameters by name: parameters.mode and load.mode are mode.
func loadParams(load map[string]string) map[string]any {
	out := map[string]any{}
	for _, f := range slices.Sorted(maps.Keys(load)) {
		name := f
		if i := strings.LastIndex(f, "."); i >= 0 {
			name = f[i+1:]
		}
		var v any
		if json.Unmarshal([]byte(load[f]), &v) != nil {
			v = load[f]
		}
		out[name] = v
	}
	return out
}

// LoadText shows a load's parameters: mode=concurrency concurrency=4; the
// parameters a mode does not use (0 or empty) are left out.
func LoadText(load map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(load)) {
		switch v := load[k].(type) {
		case float64:
			if v == 0 {
				continue
			}
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		case string:
			if v == "" {
				continue
			}
			parts = append(parts, k+"="+v)
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return orDash(strings.Join(parts, " "))
}

// FrontierGroups splits the frontier into its configurations, in order.
func FrontierGroups(pts []FrontierPoint) [][]FrontierPoint {
	var out [][]FrontierPoint
	for i, p := range pts {
		if i == 0 || p.group != pts[i-1].group {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	return out
}

// frontierTables writes one energy–latency table per configuration.
func frontierTables(b *builder, rep *Report) {
	if len(rep.Frontier) == 0 {
		return
	}
	for _, g := range FrontierGroups(rep.Frontier) {
		p0 := g[0]
		title := fmt.Sprintf("Energy–latency frontier: scenario %s, model %s, engine %s", p0.Scenario, p0.Model, p0.Engine)
		for _, c := range p0.Configuration {
			title += ", " + columnName(c.Field) + " " + c.Value
		}
		b.section(title + " (* = Pareto-optimal: no other point has both lower J/token and lower latency)")
		b.line(LatencyAxisText(&p0) + ".")
		if p0.BasisNote != "" {
			b.line("NOTE: " + p0.BasisNote + ".")
		}
		rows := make([][]string, 0, len(g))
		for i := range g {
			p := &g[i]
			mark := ""
			if p.Pareto {
				mark = "*"
			}
			meets := "-"
			if p.MeetsSLO != nil {
				meets = map[bool]string{true: "yes", false: "no"}[*p.MeetsSLO]
			}
			if p.Chosen {
				meets += " (chosen)"
			}
			rows = append(rows, []string{LoadText(p.Load), p.GPUSetting.Text, fmtJ(p.JPerToken), basisName(p.Basis), fmtJ(p.FullJPerToken), fmtF(p.Latency, 2), fmtF(p.SLOAttainment, 4),
				fmtF(p.ThroughputTokS, 1), fmtF(p.GoodputTokS, 1), mark, meets, strconv.Itoa(p.Runs), p.RunID})
		}
		b.table([]string{"load", "GPU setting", "J/token", "basis", "full-lifecycle J/token", p0.LatencyMetric, "SLO attainment", "throughput tok/s", "goodput tok/s",
			"pareto", "meets SLO", "runs", "run"}, rows)
		b.line(frontierChoiceText(g))
	}
}

// frontierChoiceText says which point of a frontier the decision chose,
// or that it chose one elsewhere, or none: the frontier singles out no
// point of its own.
func frontierChoiceText(g []FrontierPoint) string {
	for i := range g {
		if p := &g[i]; p.Chosen {
			return fmt.Sprintf("The decision's choice: run %s (%s), %s J/token (%s), %s %s ms.", p.RunID, p.Label, fmtJ(p.JPerToken), basisName(p.Basis),
				p.LatencyMetric, fmtF(p.Latency, 2))
		}
	}
	d := g[0].dec
	switch {
	case d != nil && d.Chosen:
		return fmt.Sprintf("The decision chose run %s (%s) of another configuration.", d.Run, d.Label)
	case g[0].MeetsSLO != nil:
		return "No load point meets the SLO."
	}
	return "No SLO given (compare --latency-max, or runs with slo_* parameters): no point is singled out."
}

// LatencyAxisText says which latency a frontier is drawn against and why:
// the one asked for, the SLO's own, or the default.
func LatencyAxisText(p *FrontierPoint) string {
	switch p.LatencyFrom {
	case "--latency":
		return "Latency axis: " + p.LatencyMetric + " (--latency)"
	case "the SLO":
		if p.LatencyNote != "" {
			return fmt.Sprintf("Latency axis: %s (SLO: %s; %s)", p.LatencyMetric, p.SLO, p.LatencyNote)
		}
		return fmt.Sprintf("Latency axis: %s, the percentile the SLO's attainment target implies (SLO: %s)", p.LatencyMetric, p.SLO)
	}
	return "Latency axis: " + p.LatencyMetric + " (the default: no SLO in the runs; --latency picks another)"
}

// frontierCSV writes the frontier rows of the CSV.
func frontierCSV(put func(sec, scen, group, model, engine, run, name, value, unit, note string), rep *Report) {
	for _, p := range rep.Frontier {
		note := LoadText(p.Load) + "; " + p.Label
		put("frontier", p.Scenario, "", p.Model, p.Engine, p.RunID, "j_per_token", raw(p.JPerToken), "J/token", note+"; basis "+p.Basis+" ("+basisName(p.Basis)+")")
		put("frontier", p.Scenario, "", p.Model, p.Engine, p.RunID, p.LatencyMetric, raw(p.Latency), "ms", note)
		put("frontier", p.Scenario, "", p.Model, p.Engine, p.RunID, "pareto", strconv.FormatBool(p.Pareto), "", note)
		if p.Chosen {
			put("frontier", p.Scenario, "", p.Model, p.Engine, p.RunID, "chosen", "true", "", note+"; the decision's choice")
		}
		if p.LowestMeetingSLO {
			put("frontier", p.Scenario, "", p.Model, p.Engine, p.RunID, "lowest_meeting_slo", "true", "", note)
		}
	}
}
