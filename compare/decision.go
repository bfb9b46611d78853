package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"

	"github.com/joulebench/joulebench/internal/num"
)

// Objectives a decision can minimise, the default first: J/token, or the
// cost or carbon per million output tokens where the runs' results have
// them (metrics usd_per_mtoken, gco2_per_mtoken).
var Objectives = []string{"j_per_token", "usd_per_mtoken", "gco2_per_mtoken"}

// CheckObjective validates an --objective choice ("" is j_per_token).
func CheckObjective(name string) error {
	if name == "" || slices.Contains(Objectives, name) {
		return nil
	}
	return fmt.Errorf("objective %q: valid are %s", name, strings.Join(Objectives, ", "))
}

// SLO is a latency target as a run's parameters carry it (slo_ttft_ms,
// slo_tpot_ms, slo_e2e_ms; 0 is unset) with the share of requests that
// must meet it (slo_attainment_target; 0.99 where the run has none).
type SLO struct {
	TTFTMs     float64 `json:"ttft_ms,omitempty"`
	TPOTMs     float64 `json:"tpot_ms,omitempty"`
	E2EMs      float64 `json:"e2e_ms,omitempty"`
	Attainment float64 `json:"attainment_target"`
	// Percentile is the latency percentile the attainment target implies
	// ("p90" for 0.9): the latency shown against the bound.
	Percentile string `json:"percentile"`
}

// SLOOf reads the SLO of a run's parameters; nil when no bound is set.
func SLOOf(m record.Meta) *SLO {
	s := SLO{TTFTMs: paramFloat(m.Parameters, "slo_ttft_ms"), TPOTMs: paramFloat(m.Parameters, "slo_tpot_ms"),
		E2EMs: paramFloat(m.Parameters, "slo_e2e_ms"), Attainment: paramFloat(m.Parameters, "slo_attainment_target")}
	if s.TTFTMs <= 0 && s.TPOTMs <= 0 && s.E2EMs <= 0 {
		return nil
	}
	if s.Attainment <= 0 || s.Attainment > 1 {
		s.Attainment = 0.99
	}
	s.Percentile = PercentileName(s.Attainment)
	return &s
}

// paramFloat is a numeric parameter of run.json; 0 when absent or not a
// finite number.
func paramFloat(params map[string]any, name string) float64 {
	v, ok := num.Finite(params[name])
	if s, text := params[name].(string); text {
		v, _ = strconv.ParseFloat(s, 64)
		ok = !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	if !ok {
		return 0
	}
	return v
}

// LatencyMetric is the latency a frontier under this SLO is drawn
// against: the percentile its attainment target implies (p90 for 0.9,
// Percentile) of its first bound (TTFT, then TPOT, then E2E): the latency
// that must be within the bound for the target to hold.
func (s *SLO) LatencyMetric() string {
	return s.latencyBase() + "_" + cmp.Or(s.Percentile, PercentileName(s.Attainment)) + "_ms"
}

// latencyBase names the latency of the SLO's first bound: ttft, tpot or
// e2e_latency.
func (s *SLO) latencyBase() string {
	switch {
	case s.TTFTMs > 0:
		return "ttft"
	case s.TPOTMs > 0:
		return "tpot"
	}
	return "e2e_latency"
}

// withTarget is the SLO held to attainment target a (its percentile
// follows).
func (s *SLO) withTarget(a float64) *SLO {
	c := *s
	c.Attainment, c.Percentile = a, PercentileName(a)
	return &c
}

// Bound is the bound on LatencyMetric, in ms.
func (s *SLO) Bound() float64 {
	switch {
	case s.TTFTMs > 0:
		return s.TTFTMs
	case s.TPOTMs > 0:
		return s.TPOTMs
	}
	return s.E2EMs
}

// String writes the SLO in words: "TTFT ≤ 200 ms, TPOT ≤ 40 ms for 99 % of
// requests".
func (s *SLO) String() string {
	if s == nil {
		return "none"
	}
	var b []string
	for _, x := range []struct {
		name string
		v    float64
	}{{"TTFT", s.TTFTMs}, {"TPOT", s.TPOTMs}, {"E2E", s.E2EMs}} {
		if x.v > 0 {
			b = append(b, x.name+" ≤ "+g(x.v)+" ms")
		}
	}
	return strings.Join(b, ", ") + " for " + pctShort(s.Attainment) + " of requests (" + cmp.Or(s.Percentile, PercentileName(s.Attainment)) + ")"
}

// Choice is a configuration and load a decision names: the point's
// figures (medians of its repetitions).
type Choice struct {
	// Run is the point's run (the first of its Runs repetitions).
	Run  string `json:"run"`
	Dir  string `json:"dir"`
	Runs int    `json:"runs"`
	// Configuration names it: model, engine, scenario, then each field
	// that differs between the runs compared.
	Configuration []FieldValue   `json:"configuration"`
	Load          map[string]any `json:"load"`
	LoadText      string         `json:"load_text"`
	// GPUSetting is the point's GPU setting; Label names the point as
	// every view does ("c32 · 250 W").
	GPUSetting GPUSetting `json:"gpu_setting"`
	Label      string     `json:"label"`
	// Basis is the J/token basis (BasisSteady, ...); BasisText says it in
	// words, as every figure that depends on it is labelled.
	Basis         string   `json:"basis"`
	BasisText     string   `json:"basis_text"`
	JPerToken     *float64 `json:"j_per_token"`
	LatencyMetric string   `json:"latency_metric"`
	Latency       *float64 `json:"latency"`
	LatencyBound  *float64 `json:"latency_bound"`
	Attainment    *float64 `json:"slo_attainment"`
	Target        float64  `json:"attainment_target,omitempty"`
	Throughput    *float64 `json:"throughput_tok_s"`
	Goodput       *float64 `json:"goodput_tok_s"`
	USDPerMToken  *float64 `json:"usd_per_mtoken,omitempty"`
	GCO2PerMToken *float64 `json:"gco2_per_mtoken,omitempty"`
}

// Rejection is a point (or a run) the decision did not choose, and why.
type Rejection struct {
	Run    string `json:"run"`
	Load   string `json:"load"`
	Reason string `json:"reason"`
}

// Decision answers "which configuration and load, at the lowest objective
// (J/token) meeting the SLO": computed once here, over every configuration
// compared, and rendered by every format.
type Decision struct {
	// Objective is what is minimised (one of Objectives).
	Objective string `json:"objective"`
	// SLO is the SLO the chosen point's runs carry (nil: none, or only
	// --latency-max); SLOText says it in words, and where it comes from.
	SLO     *SLO   `json:"slo"`
	SLOText string `json:"slo_text"`
	// Method is the method (profile name and sha256) of the points
	// decided on, in words; a profile that differs from the built-in it
	// names says so.
	Method string `json:"method,omitempty"`
	// Chosen is false when no point qualifies (Note says why); Choice's
	// fields are then empty.
	Chosen bool `json:"chosen"`
	Choice
	// Note says what the choice rests on (the basis, a figure a check
	// removed) or why there is none.
	Note string `json:"note,omitempty"`
	// JPerTokenCI is the interval [lo, hi] of the chosen J/token (nil:
	// none could be drawn); CIMethod says how it was drawn (batch means
	// over the steady windows of one run, a t-interval over repetitions)
	// or why there is none.
	JPerTokenCI *[2]float64 `json:"j_per_token_ci"`
	CIMethod    string      `json:"ci_method,omitempty"`
	RunnerUp    *RunnerUp   `json:"runner_up"`
	Rejected    []Rejection `json:"rejected"`
}

// RunnerUp is the point next to the choice, and whether the two are told
// apart: Separable is false when their J/token intervals overlap (the
// choice then rests on the tie rule, and Why says so).
type RunnerUp struct {
	Choice
	Separable bool   `json:"separable"`
	Why       string `json:"why"`
}

// decide chooses among the points of every configuration, per SLO and
// method (decideGroup): points of different SLOs or methods are never
// decided together. With one SLO and method the decision is that group's;
// with several, the decision chooses nothing and says why, and decisions
// holds one per SLO and method. Every run out of the statistics, and
// every point that carries no SLO where others do, is listed with why.
func decide(rows []RunRow, points []FrontierPoint, o FrontierOptions) (*Decision, []*Decision) {
	var common []Rejection
	for _, r := range rows {
		if !r.Included {
			common = append(common, Rejection{Run: r.RunID, Load: loadTextOf(r.load), Reason: "out of the statistics: " + flagsWhy(r.Flags, ValueAll)})
		}
	}
	sloGiven := o.LatencyMax > 0
	for i := range points {
		sloGiven = sloGiven || points[i].SLO != nil || points[i].SLOAttainment != nil
	}
	byKey := map[string][]*FrontierPoint{}
	var keys []string
	for i := range points {
		pt := &points[i]
		if sloGiven && pt.MeetsSLO == nil {
			common = append(common, Rejection{Run: pt.RunID, Load: LoadText(pt.Load), Reason: "no SLO in its runs' parameters: not measured against one"})
			continue
		}
		k := sloKey(pt) + "\x00" + pt.method.key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], pt)
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		pa, pb := byKey[a][0], byKey[b][0]
		return cmp.Or(cmpSLO(pa, pb), cmp.Compare(pa.method.text, pb.method.text))
	})
	ds := make([]*Decision, 0, len(keys))
	for _, k := range keys {
		ds = append(ds, decideGroup(byKey[k], o, sloGiven))
	}
	if len(ds) <= 1 {
		if len(ds) == 0 {
			ds = append(ds, noPointDecision(rows, o, sloGiven))
		}
		ds[0].Rejected = append(common, ds[0].Rejected...)
		if ds[0].Rejected == nil {
			ds[0].Rejected = []Rejection{}
		}
		return ds[0], ds
	}
	return apart(ds, common), ds
}

// noPointDecision is the decision when no point is left to decide on: it
// still names the SLO the runs carry (or --latency-max).
func noPointDecision(rows []RunRow, o FrontierOptions, sloGiven bool) *Decision {
	var pt *FrontierPoint
	for _, r := range rows {
		if r.slo != nil {
			target := cmp.Or(o.Attainment, r.slo.Attainment)
			slo := r.slo.withTarget(target)
			pt = &FrontierPoint{SLO: slo, AttainmentTarget: target, LatencyMetric: cmp.Or(o.Latency, slo.LatencyMetric())}
			break
		}
	}
	if pt == nil && o.LatencyMax > 0 {
		pt = &FrontierPoint{LatencyMetric: cmp.Or(o.Latency, DefaultLatency)}
	}
	d := decideGroup(nil, o, sloGiven || pt != nil)
	if pt != nil {
		d.SLO, d.SLOText = pt.SLO, sloText(pt, o)
	}
	return d
}

// apart is the decision over points of several SLOs or methods: no
// choice, and why, with each SLO and method's own choice in the note.
func apart(ds []*Decision, common []Rejection) *Decision {
	d := &Decision{Objective: ds[0].Objective, Rejected: append([]Rejection{}, common...)}
	var slos, methods, each []string
	for _, g := range ds {
		if !slices.Contains(slos, g.SLOText) {
			slos = append(slos, g.SLOText)
		}
		if !slices.Contains(methods, g.Method) {
			methods = append(methods, g.Method)
		}
		what := "no choice (" + cmp.Or(g.Note, "no point qualifies") + ")"
		if g.Chosen {
			what = fmt.Sprintf("run %s, load %s, %s J/token (%s)", g.Run, g.LoadText, fmtJ(g.JPerToken), g.Basis)
		}
		each = append(each, "SLO "+g.SLOText+", method "+orDash(g.Method)+": "+what)
	}
	var differ []string
	if len(slos) > 1 {
		differ = append(differ, fmt.Sprintf("%d SLOs", len(slos)))
		d.SLOText = fmt.Sprintf("the runs carry %d different SLOs (%s): decided per SLO, never under one", len(slos), strings.Join(slos, "; "))
	} else {
		d.SLO, d.SLOText = ds[0].SLO, ds[0].SLOText
	}
	if len(methods) > 1 {
		differ = append(differ, fmt.Sprintf("%d methods (profiles)", len(methods)))
	} else {
		d.Method = ds[0].Method
	}
	d.Note = "not decided together: the points compared are of " + strings.Join(differ, " and ") +
		", so each gets its own decision (decisions) — " + strings.Join(each, "; ")
	return d
}

// sloKey identifies the SLO a point is held to: its runs' bounds and the
// attainment target it must reach ("" when its runs carry none).
func sloKey(pt *FrontierPoint) string {
	if pt.SLO == nil {
		return ""
	}
	return fmt.Sprintf("%g/%g/%g/%g", pt.SLO.TTFTMs, pt.SLO.TPOTMs, pt.SLO.E2EMs, pt.AttainmentTarget)
}

// cmpSLO orders points by their SLO: none first, then the tightest
// bounds (TTFT, TPOT, E2E), then the attainment target.
func cmpSLO(a, b *FrontierPoint) int {
	switch {
	case a.SLO == nil || b.SLO == nil:
		return cmp.Compare(boolInt(a.SLO != nil), boolInt(b.SLO != nil))
	}
	return cmp.Or(cmp.Compare(a.SLO.TTFTMs, b.SLO.TTFTMs), cmp.Compare(a.SLO.TPOTMs, b.SLO.TPOTMs),
		cmp.Compare(a.SLO.E2EMs, b.SLO.E2EMs), cmp.Compare(a.AttainmentTarget, b.AttainmentTarget))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decideGroup chooses among points of one SLO and method: those meeting
// the SLO (all of them when no SLO is given anywhere), by the objective's
// value, lowest first; every other point is listed with why. The SLO is
// named whether or not a point meets it.
func decideGroup(points []*FrontierPoint, o FrontierOptions, sloGiven bool) *Decision {
	d := &Decision{Objective: cmp.Or(o.Objective, Objectives[0]), Rejected: []Rejection{}}
	if len(points) > 0 {
		d.Method = points[0].method.text
		if sloGiven {
			d.SLO, d.SLOText = points[0].SLO, sloText(points[0], o)
		}
	}
	var cands []*FrontierPoint
	for _, pt := range points {
		switch {
		case !sloGiven:
			cands = append(cands, pt)
		case !*pt.MeetsSLO:
			d.reject(pt, "misses the SLO: "+missBy(pt))
		default:
			cands = append(cands, pt)
		}
	}
	jBasis, notes := decisionBasis(cands)
	if len(cands) == 0 {
		jBasis, _ = decisionBasis(points)
	}
	// Every view shows the points on the basis the decision compares
	// them on: one J/token per decision.
	for _, pt := range points {
		pt.dec, pt.Basis, pt.JPerToken = d, jBasis, pt.js[jBasis]
		if jBasis != BasisFormal {
			pt.BasisNote = ""
		}
	}
	basis := d.Objective
	if d.Objective == Objectives[0] {
		basis = jBasis
	} else {
		notes = nil
	}
	valueName := basis
	if d.Objective != Objectives[0] {
		valueName = objectiveMetric(d.Objective, jBasis) // on the J/token basis shown beside it
	}
	value := func(pt *FrontierPoint) *float64 {
		if d.Objective == Objectives[0] {
			return pt.js[basis]
		}
		return pt.objs[valueName]
	}
	ci := func(pt *FrontierPoint) *[2]float64 {
		c, _ := pt.interval(valueName)
		return c
	}
	var valued []*FrontierPoint
	for _, pt := range cands {
		if value(pt) == nil {
			d.reject(pt, cond(sloGiven, "meets the SLO but has no ", "has no ")+basisName(basis)+": "+missingWhy(pt, basis))
			continue
		}
		valued = append(valued, pt)
	}
	slices.SortStableFunc(valued, func(a, b *FrontierPoint) int {
		return cmp.Or(cmp.Compare(*value(a), *value(b)), cmpPtr(a.Latency, b.Latency), cmp.Compare(a.RunID, b.RunID))
	})
	switch {
	case len(points) == 0:
		notes = append(notes, "no run in the statistics: nothing to choose from")
	case len(valued) == 0 && len(cands) == 0:
		notes = append(notes, "no point meets the SLO")
	case len(valued) == 0:
		notes = append(notes, cond(sloGiven, "no point meeting the SLO has ", "no point has ")+basisName(basis))
	}
	if !sloGiven {
		d.SLOText = "none: no run carries slo_* parameters and no --latency-max was given, so the choice is the lowest " + basisName(basis) + " at any latency"
	}
	if len(valued) > 0 {
		order, rule := tieBreak(valued, ci, value)
		if rule != "" {
			notes = append(notes, rule)
		}
		best := order[0]
		d.Chosen, d.Choice = true, choiceOf(best, basis)
		best.Chosen, best.LowestMeetingSLO = true, sloGiven
		d.JPerTokenCI, d.CIMethod = best.interval(jBasis)
		if len(order) > 1 {
			sep, why := separation(best, order[1], ci, value)
			d.RunnerUp = &RunnerUp{Choice: choiceOf(order[1], basis), Separable: sep, Why: why}
		}
		for i, pt := range order[1:] {
			why := againstChosen(pt, best, valued, value, basis, sloGiven)
			if i == 0 {
				why = "runner-up: " + why + "; " + d.RunnerUp.Why
			}
			d.reject(pt, why)
		}
	}
	d.Note = strings.Join(notes, "; ")
	return d
}

func (d *Decision) reject(pt *FrontierPoint, why string) {
	d.Rejected = append(d.Rejected, Rejection{Run: pt.RunID, Load: LoadText(pt.Load), Reason: why})
}

// decisionBasis is the J/token basis every candidate is compared on: the
// first of steady state and the formal window that each has, else the one
// most have (steady on a tie; the others are then out for lacking it);
// notes say which candidates lacked the steady figure and why.
func decisionBasis(cands []*FrontierPoint) (string, []string) {
	var lack []string
	formal := 0
	for _, pt := range cands {
		if pt.js[BasisSteady] == nil {
			lack = append(lack, pt.RunID+" ("+missingWhy(pt, BasisSteady)+")")
		}
		if pt.js[BasisFormal] != nil {
			formal++
		}
	}
	steady := len(cands) - len(lack)
	if len(lack) == 0 || steady >= formal {
		return BasisSteady, nil
	}
	return BasisFormal, []string{"compared on formal-window J/token: steady-state J/token is missing for " + strings.Join(lack, ", ")}
}

// BasisShort names a J/token basis in short words, as a chart's axis or a
// card labels a figure on it: "steady state", "per good token, formal
// window"; an unknown basis as its code.
func BasisShort(basis string) string {
	switch basis {
	case BasisSteady:
		return "steady state"
	case BasisFormal:
		return "formal window"
	case BasisGoodTok:
		return "per good token, formal window"
	case BasisGoodTokS:
		return "per good token, steady state"
	}
	return basis
}

// basisName names a basis or objective in words.
func basisName(basis string) string {
	switch basis {
	case BasisSteady:
		return "steady-state J/token"
	case BasisFormal:
		return "formal-window J/token"
	case BasisGoodTok:
		return "J per good token (formal window, tokens of requests meeting the SLO)"
	case BasisGoodTokS:
		return "J per good token (steady state, tokens of requests meeting the SLO)"
	}
	return basis
}

// missingWhy says why a point lacks the figure of basis: a flag removed it
// (which), or its runs do not have it.
func missingWhy(pt *FrontierPoint, basis string) string {
	if checks := pt.invalid[basis]; checks != "" {
		return "invalidated by failed " + checks
	}
	if basis == BasisSteady {
		for _, r := range pt.rows {
			if r.SteadyJPerToken != nil && !r.Uses(ValueSteady) || slices.Contains(r.Removed, ValueSteady) {
				return "removed by " + flagNamesRemoving(r.Flags, ValueSteady)
			}
		}
		return "steady state not reached"
	}
	return "not in its results"
}

// flagsWhy names the flags that remove value (or everything), with their
// details.
func flagsWhy(flags []Flag, value string) string {
	var out []string
	for _, f := range flags {
		if slices.Contains(f.Removes, value) || slices.Contains(f.Removes, ValueAll) {
			out = append(out, "flag "+f.Name+cond(f.Detail != "", " ("+f.Detail+")", ""))
		}
	}
	return cmp.Or(strings.Join(out, "; "), "a flag")
}

// flagNamesRemoving names the flags that remove value (or everything),
// each with the failed check it stands for: "flag not_steady (check
// steady_state_reached)" (their details are in the flagged runs).
func flagNamesRemoving(flags []Flag, value string) string {
	var out []string
	for _, f := range flags {
		if slices.Contains(f.Removes, value) || slices.Contains(f.Removes, ValueAll) {
			out = append(out, "flag "+f.Name+cond(f.Check != "" && f.Check != f.Name, " (check "+f.Check+")", ""))
		}
	}
	return cmp.Or(strings.Join(out, ", "), "a flag")
}

func cond(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// missBy says by how much a point misses the SLO: its attainment under
// the target, its latency over the bound.
func missBy(pt *FrontierPoint) string {
	var out []string
	switch {
	case pt.SLOAttainment != nil && *pt.SLOAttainment < pt.AttainmentTarget:
		out = append(out, fmt.Sprintf("attainment %s < target %s", strconv.FormatFloat(*pt.SLOAttainment, 'f', 4, 64), g(pt.AttainmentTarget)))
	case pt.SLOAttainment == nil && pt.SLO != nil && pt.invalid["slo_attainment"] != "":
		out = append(out, "slo_attainment invalidated by failed "+pt.invalid["slo_attainment"])
	case pt.SLOAttainment == nil && pt.SLO != nil:
		out = append(out, "no slo_attainment in its results")
	}
	if pt.LatencyBound != nil && pt.Latency == nil {
		out = append(out, fmt.Sprintf("no %s value in its results, so it cannot be held to the bound (%s ms)", pt.LatencyMetric, g(*pt.LatencyBound)))
	}
	if pt.LatencyBound != nil && pt.Latency != nil && *pt.Latency > *pt.LatencyBound {
		out = append(out, fmt.Sprintf("%s %s ms > bound %s ms (+%s)", pt.LatencyMetric, fmtF(pt.Latency, 2), g(*pt.LatencyBound),
			pct(*pt.Latency / *pt.LatencyBound - 1)))
	}
	if len(out) == 0 {
		return "latency above --latency-max"
	}
	return strings.Join(out, "; ")
}

// againstChosen says why a point meeting the SLO was not chosen: another
// point meeting it dominates it (no higher value, no higher latency), or
// its value is above the chosen one's by so much.
func againstChosen(pt, best *FrontierPoint, valued []*FrontierPoint, value func(*FrontierPoint) *float64, basis string, sloGiven bool) string {
	v := *value(pt)
	for _, o := range valued {
		if o == pt || o.LatencyMetric != pt.LatencyMetric || o.Latency == nil || pt.Latency == nil {
			continue
		}
		ov := *value(o)
		if ov <= v && *o.Latency <= *pt.Latency && (ov < v || *o.Latency < *pt.Latency) {
			return fmt.Sprintf("dominated by %s (%s): %s vs %s %s, %s %s vs %s ms", o.RunID, LoadText(o.Load), g4(ov), g4(v), basisUnit(basis),
				pt.LatencyMetric, fmtF(o.Latency, 2), fmtF(pt.Latency, 2))
		}
	}
	bv := *value(best)
	why := fmt.Sprintf("%s %s %s, %s the chosen %s", cond(sloGiven, "meets the SLO at", "at"), g4(v), basisUnit(basis), cond(v < bv, "below", "above"), g4(bv))
	if bv > 0 {
		why += " (" + signedPct(v/bv-1) + ")"
	}
	if v < bv {
		why += ", not chosen by the tie rule (see the note)"
	}
	if pt.Latency != nil && best.Latency != nil && pt.LatencyMetric == best.LatencyMetric && *pt.Latency < *best.Latency {
		why += fmt.Sprintf(", with lower %s (%s vs %s ms)", pt.LatencyMetric, fmtF(pt.Latency, 2), fmtF(best.Latency, 2))
	}
	return why
}

func basisUnit(basis string) string {
	switch basis {
	case "usd_per_mtoken":
		return "USD/Mtoken"
	case "gco2_per_mtoken":
		return "gCO2/Mtoken"
	}
	return "J/token"
}

func g4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

func choiceOf(pt *FrontierPoint, basis string) Choice {
	cfg := append([]FieldValue{{Field: "model", Value: pt.Model}, {Field: "engine", Value: pt.Engine}, {Field: "scenario", Value: pt.Scenario}},
		pt.Configuration...)
	c := Choice{Run: pt.RunID, Dir: pt.Dir, Runs: pt.Runs, Configuration: cfg, Load: pt.Load, LoadText: LoadText(pt.Load),
		LatencyMetric: pt.LatencyMetric, Latency: pt.Latency, LatencyBound: pt.LatencyBound, Attainment: pt.SLOAttainment,
		Throughput: pt.ThroughputTokS, Goodput: pt.GoodputTokS,
	}
	if pt.SLO != nil || pt.SLOAttainment != nil {
		c.Target = pt.AttainmentTarget
	}
	c.Basis, c.JPerToken = basis, pt.js[basis]
	if _, ok := pt.js[basis]; !ok { // another objective: J/token on the point's own basis
		c.Basis, c.JPerToken = pt.Basis, pt.JPerToken
	}
	c.BasisText = basisName(c.Basis)
	// Cost and carbon on the J/token basis shown beside them.
	c.USDPerMToken, c.GCO2PerMToken = pt.objs[objectiveMetric("usd_per_mtoken", c.Basis)], pt.objs[objectiveMetric("gco2_per_mtoken", c.Basis)]
	c.GPUSetting, c.Label = pt.GPUSetting, pt.Label
	return c
}

// runnerUpChoice is the runner-up's choice; nil when none.
func runnerUpChoice(d *Decision) *Choice {
	if d.RunnerUp == nil {
		return nil
	}
	return &d.RunnerUp.Choice
}

// sloText says the SLO a decision holds points to, and where it comes
// from.
func sloText(pt *FrontierPoint, o FrontierOptions) string {
	var parts []string
	if pt.SLO != nil {
		s := *pt.SLO
		s.Attainment = pt.AttainmentTarget
		parts = append(parts, s.String()+" (the runs' slo_* parameters)")
	}
	if o.LatencyMax > 0 {
		parts = append(parts, fmt.Sprintf("%s ≤ %s ms (--latency-max)", pt.LatencyMetric, g(o.LatencyMax)))
	}
	if pt.SLO == nil && pt.SLOAttainment != nil {
		parts = append(parts, "slo_attainment ≥ "+g(pt.AttainmentTarget))
	}
	return strings.Join(parts, "; ")
}

// loadTextOf shows a run's load fields as LoadText does.
func loadTextOf(load map[string]string) string { return LoadText(loadParams(load)) }

// objectiveName is how a decision's objective is headed.
func objectiveName(obj string) string {
	switch obj {
	case "usd_per_mtoken":
		return "cost (USD per million output tokens)"
	case "gco2_per_mtoken":
		return "carbon (gCO2 per million output tokens)"
	}
	return "J/token"
}

// decisionSection writes the decision: the SLO, the choice and the
// runner-up with their figures, and why every other point is out; with
// several SLOs or methods, why they are not decided together, then each
// one's decision.
func decisionSection(b *builder, rep *Report) {
	d := rep.Decision
	if len(rep.Decisions) <= 1 {
		b.section("Decision: the lowest " + objectiveName(d.Objective) + " meeting the SLO, over every configuration compared")
		decisionBody(b, d, false)
		return
	}
	b.section("Decision: the lowest " + objectiveName(d.Objective) + " meeting the SLO, per SLO and method (never decided together)")
	b.line("SLO: " + d.SLOText + ".")
	if d.Method != "" {
		b.line("Method: " + d.Method + ".")
	}
	b.line(strings.ToUpper(d.Note[:1]) + d.Note[1:] + ".")
	rejectedTable(b, d.Rejected)
	for i, g := range rep.Decisions {
		b.section(fmt.Sprintf("Decision %d of %d: SLO %s; method %s", i+1, len(rep.Decisions), g.SLOText, orDash(g.Method)))
		decisionBody(b, g, true)
	}
}

// decisionBody writes one decision under its heading; the method is said
// where several are decided apart (apart) or where the profile differs
// from the built-in it names.
func decisionBody(b *builder, d *Decision, apart bool) {
	b.line("SLO: " + d.SLOText + ".")
	if d.Method != "" && (apart || strings.Contains(d.Method, "profile edited")) {
		b.line("Method: " + d.Method + ".")
	}
	if !d.Chosen {
		b.line("No choice: " + cmp.Or(d.Note, "no point qualifies") + ".")
	} else {
		c := &d.Choice
		b.line(fmt.Sprintf("Chosen: run %s (%s; %s), load %s: %s.", c.Run, c.Label, configText(c.Configuration), c.LoadText, choiceFigures(c)))
		b.line(fmt.Sprintf("Interval of its %s: %s (%s).", c.BasisText, ciText(d.JPerTokenCI), d.CIMethod))
		if d.RunnerUp != nil {
			b.line(fmt.Sprintf("Runner-up: run %s (%s), %s.", d.RunnerUp.Run, d.RunnerUp.Label, d.RunnerUp.Why))
		}
		if d.Note != "" {
			b.line("Note: " + d.Note + ".")
		}
		choiceTable(b, d)
	}
	rejectedTable(b, d.Rejected)
}

// choiceTable writes the chosen point's and the runner-up's figures.
func choiceTable(b *builder, d *Decision) {
	c := &d.Choice
	head := []string{"", "run", "point", "configuration", "load", "J/token", "basis", "latency metric", "latency ms", "bound ms", "SLO attainment", "throughput tok/s", "goodput tok/s"}
	withUSD, withCO2 := c.USDPerMToken != nil, c.GCO2PerMToken != nil
	if d.RunnerUp != nil {
		withUSD, withCO2 = withUSD || d.RunnerUp.USDPerMToken != nil, withCO2 || d.RunnerUp.GCO2PerMToken != nil
	}
	if withUSD {
		head = append(head, "USD/Mtoken")
	}
	if withCO2 {
		head = append(head, "gCO2/Mtoken")
	}
	row := func(label string, c *Choice) []string {
		r := []string{label, c.Run, c.Label, configText(c.Configuration), c.LoadText, fmtJ(c.JPerToken), c.BasisText, c.LatencyMetric, fmtF(c.Latency, 2),
			fmtBound(c.LatencyBound), fmtF(c.Attainment, 4), fmtF(c.Throughput, 1), fmtF(c.Goodput, 1)}
		if withUSD {
			r = append(r, fmtF(c.USDPerMToken, 4))
		}
		if withCO2 {
			r = append(r, fmtF(c.GCO2PerMToken, 2))
		}
		return r
	}
	rows := [][]string{row("chosen", c)}
	if d.RunnerUp != nil {
		rows = append(rows, row("runner-up", &d.RunnerUp.Choice))
	}
	b.table(head, rows)
}

// rejectedTable writes the points (and runs) not chosen, with why.
func rejectedTable(b *builder, rejected []Rejection) {
	if len(rejected) == 0 {
		return
	}
	rows := make([][]string, 0, len(rejected))
	for _, r := range rejected {
		rows = append(rows, []string{r.Run, r.Load, r.Reason})
	}
	t := &doc.Table{Columns: doc.Cols("not chosen: run", "load", "why"), MaxWidth: 60, NoWrapMarkdown: true}
	t.Add(rows...)
	b.d.Add(t)
}

// fmtBound shows a latency bound as given (%g): a tiny but valid bound
// such as 1e-06 ms is not rounded to 0.00.
func fmtBound(v *float64) string {
	if v == nil {
		return "-"
	}
	return g(*v)
}

// configText writes a configuration's fields: "model m, engine sim, ...".
func configText(fv []FieldValue) string {
	parts := make([]string, 0, len(fv))
	for _, v := range fv {
		parts = append(parts, columnName(v.Field)+" "+v.Value)
	}
	return orDash(strings.Join(parts, ", "))
}

// choiceFigures are a choice's figures in words, those it has: "0.2345
// J/token (steady_state), ttft_p99_ms 180.20 ms (bound 200 ms), ...".
func choiceFigures(c *Choice) string {
	parts := []string{fmtJ(c.JPerToken) + " J/token (" + cmp.Or(c.BasisText, c.Basis) + ")"}
	if c.Latency != nil {
		l := c.LatencyMetric + " " + fmtF(c.Latency, 2) + " ms"
		if c.LatencyBound != nil {
			l += " (bound " + g(*c.LatencyBound) + " ms)"
		}
		parts = append(parts, l)
	}
	for _, f := range []struct {
		name string
		v    *float64
		prec int
		unit string
	}{{"attainment", c.Attainment, 4, ""}, {"throughput", c.Throughput, 1, " tok/s"}, {"goodput", c.Goodput, 1, " tok/s"},
		{"cost", c.USDPerMToken, 4, " USD/Mtoken"}, {"carbon", c.GCO2PerMToken, 2, " gCO2/Mtoken"}} {
		if f.v != nil {
			parts = append(parts, f.name+" "+fmtF(f.v, f.prec)+f.unit)
		}
	}
	return strings.Join(parts, ", ")
}

// decisionCSV writes the decisions' rows of the CSV: each chosen point's
// and runner-up's figures, and each point not chosen with why; with
// several SLOs or methods, each decision's rows carry its SLO and method
// as their group, and the runs out of every decision come first.
func decisionCSV(put func(sec, scen, group, model, engine, run, name, value, unit, note string), rep *Report) {
	if rep.Decision == nil {
		return
	}
	if len(rep.Decisions) <= 1 {
		oneDecisionCSV(put, rep.Decision, "")
		return
	}
	for _, r := range rep.Decision.Rejected {
		put("not_chosen", "", "", "", "", r.Run, "reason", "", "", r.Reason)
	}
	for _, d := range rep.Decisions {
		oneDecisionCSV(put, d, "SLO "+d.SLOText+"; method "+orDash(d.Method))
	}
}

func oneDecisionCSV(put func(sec, scen, group, model, engine, run, name, value, unit, note string), d *Decision, group string) {
	if !d.Chosen {
		// Nothing chosen: say so, and keep every point with why.
		put("decision", "", group, "", "", "", "chosen", "false", "", cmp.Or(d.Note, "no point qualifies"))
		for _, r := range d.Rejected {
			put("not_chosen", "", group, "", "", r.Run, "reason", "", "", r.Reason)
		}
		return
	}
	for _, x := range []struct {
		sec string
		c   *Choice
	}{{"decision", &d.Choice}, {"runner_up", runnerUpChoice(d)}} {
		if x.c == nil {
			continue
		}
		c := x.c
		put(x.sec, "", group, "", "", c.Run, "j_per_token", raw(c.JPerToken), "J/token", "basis "+c.Basis+" ("+c.BasisText+"); "+c.Label+"; "+c.LoadText)
		put(x.sec, "", group, "", "", c.Run, "gpu_setting", c.GPUSetting.Text, "", "")
		if x.sec == "decision" {
			lo, hi := (*float64)(nil), (*float64)(nil)
			if d.JPerTokenCI != nil {
				lo, hi = &d.JPerTokenCI[0], &d.JPerTokenCI[1]
			}
			put(x.sec, "", group, "", "", c.Run, "j_per_token_ci_lo", raw(lo), "J/token", d.CIMethod)
			put(x.sec, "", group, "", "", c.Run, "j_per_token_ci_hi", raw(hi), "J/token", c.BasisText)
		} else {
			put(x.sec, "", group, "", "", c.Run, "separable", strconv.FormatBool(d.RunnerUp.Separable), "", d.RunnerUp.Why)
		}
		put(x.sec, "", group, "", "", c.Run, c.LatencyMetric, raw(c.Latency), "ms", "bound "+raw(c.LatencyBound))
		put(x.sec, "", group, "", "", c.Run, "slo_attainment", raw(c.Attainment), "fraction", "target "+g(c.Target))
		put(x.sec, "", group, "", "", c.Run, "output_throughput_tok_s", raw(c.Throughput), "tok/s", "")
		put(x.sec, "", group, "", "", c.Run, "goodput_tok_s", raw(c.Goodput), "tok/s", "")
		if c.USDPerMToken != nil {
			put(x.sec, "", group, "", "", c.Run, "usd_per_mtoken", raw(c.USDPerMToken), "USD/Mtoken", "")
		}
		if c.GCO2PerMToken != nil {
			put(x.sec, "", group, "", "", c.Run, "gco2_per_mtoken", raw(c.GCO2PerMToken), "gCO2/Mtoken", "")
		}
	}
	for _, r := range d.Rejected {
		put("not_chosen", "", group, "", "", r.Run, "reason", "", "", r.Reason)
	}
}
