package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/plot"
)

// Decided is every point a comparison's decision weighed, as every view
// draws it: the J/token of the decision's basis against the latency its
// SLO's target implies (tpot_p90_ms for TPOT at 0.9; without an SLO the
// decision's latency), one series per GPU setting (and configuration,
// where configurations differ), each point labelled as every view labels
// it ("c32 · 250 W"), repetitions as medians.
type Decided struct {
	// Latency is the x metric; Basis the J/token basis in words.
	Latency, Basis string
	// Bound is the SLO's bound on Latency (nil: none); BoundLabel names
	// it ("SLO: TPOT p90 ≤ 13 ms (90 % of requests)").
	Bound      *float64
	BoundLabel string
	// Chosen is the decision's run and ChosenLabel its label.
	Chosen, ChosenLabel string
	Series              []DecidedSeries
}

// DecidedSeries is one GPU setting's points, in order of latency.
type DecidedSeries struct {
	Name   string
	Points []DecidedPoint
}

// DecidedPoint is one point: its latency, J/token, label and (first) run.
type DecidedPoint struct {
	Latency, JPerToken float64
	Label, Run         string
}

// BasisMetrics are the result metrics of each J/token basis.
var BasisMetrics = map[string]string{
	compare.BasisSteady:   "steady_state_j_per_token",
	compare.BasisFormal:   "formal_j_per_token",
	compare.BasisGoodTok:  "j_per_good_token",
	compare.BasisGoodTokS: "j_per_good_token_steady",
}

// BasisWords names a J/token basis in words, as every figure that
// depends on it is labelled.
func BasisWords(b string) string { return compare.BasisShort(b) }

// ImpliedLatency is the latency a decision's SLO speaks of: its first
// bound's metric at the percentile its attainment target implies
// (tpot_p90_ms for TPOT at 0.9), and that bound; without an SLO the
// decision's own latency metric and bound.
func ImpliedLatency(d *compare.Decision) (string, *float64) {
	if d.SLO == nil {
		return d.LatencyMetric, d.LatencyBound
	}
	m := d.SLO.LatencyMetric()
	if i := strings.LastIndex(m, "_p"); i >= 0 {
		m = m[:i] + "_" + percentileOf(d.SLO) + "_ms"
	}
	b := d.SLO.Bound()
	return m, &b
}

func percentileOf(s *compare.SLO) string {
	if s.Percentile != "" {
		return s.Percentile
	}
	return compare.PercentileName(s.Attainment)
}

// sloLineLabel names the SLO's line: "SLO: TPOT p90 ≤ 13 ms (90 % of
// requests)"; a bound without an SLO (--latency-max) "bound tpot_p50_ms
// ≤ 400 ms".
func sloLineLabel(d *compare.Decision, metric string, bound float64) string {
	b := strconv.FormatFloat(bound, 'g', -1, 64)
	if d.SLO == nil {
		return "bound " + metric + " ≤ " + b + " ms"
	}
	name := strings.ToUpper(strings.SplitN(metric, "_", 2)[0])
	return fmt.Sprintf("SLO: %s %s ≤ %s ms (%s %% of requests)", name, percentileOf(d.SLO), b, strconv.FormatFloat(d.SLO.Attainment*100, 'g', -1, 64))
}

// decidedAcc gathers a point's runs.
type decidedAcc struct {
	series, label, run string
	js, lats           []float64
}

// DecidedPoints gathers every point rep's decision weighed from the
// runs' results (runs in the statistics, a J/token a flag or a failed
// check removes left out, as compare leaves it out); nil when the decision chose nothing (it then
// has no basis) or no run has both figures.
func DecidedPoints(rep *compare.Report, runs []compare.Run) *Decided {
	d := rep.Decision
	if d == nil || !d.Chosen || BasisMetrics[d.Basis] == "" {
		return nil
	}
	results := map[string]*record.Results{}
	for _, r := range runs {
		results[r.Meta.RunID] = r.Results
	}
	metric, bound := ImpliedLatency(d)
	if !slices.ContainsFunc(rep.Runs, func(r compare.RunRow) bool { _, ok := finiteResult(results[r.RunID], metric); return ok }) {
		metric, bound = d.LatencyMetric, d.LatencyBound
	}
	jName := BasisMetrics[d.Basis]
	steady := d.Basis == compare.BasisSteady || d.Basis == compare.BasisGoodTokS
	seriesOf := settingSeries(rep.Runs)
	var accs []*decidedAcc
	byKey := map[string]*decidedAcc{}
	for i := range rep.Runs {
		row := &rep.Runs[i]
		if !row.Included || steady && !row.Uses(compare.ValueSteady) {
			continue
		}
		res := results[row.RunID]
		j, jok := finiteResult(res, jName)
		lat, lok := finiteResult(res, metric)
		// As compare: a J/token a failed check invalidates is left out;
		// a latency it invalidates is still drawn (compare decides on it).
		if !jok || !lok || invalidated(res, jName) {
			continue
		}
		s := seriesOf(row)
		key := s + "\x00" + row.Label
		a := byKey[key]
		if a == nil {
			a = &decidedAcc{series: s, label: row.Label, run: row.RunID}
			byKey[key] = a
			accs = append(accs, a)
		}
		a.js, a.lats = append(a.js, j), append(a.lats, lat)
	}
	if len(accs) == 0 {
		return nil
	}
	out := &Decided{Latency: metric, Basis: BasisWords(d.Basis), Chosen: d.Run, ChosenLabel: d.Label}
	if bound != nil {
		out.Bound, out.BoundLabel = bound, sloLineLabel(d, metric, *bound)
	}
	idx := map[string]int{}
	for _, a := range accs {
		i, ok := idx[a.series]
		if !ok {
			i = len(out.Series)
			idx[a.series] = i
			out.Series = append(out.Series, DecidedSeries{Name: a.series})
		}
		out.Series[i].Points = append(out.Series[i].Points, DecidedPoint{Latency: medianOf(a.lats), JPerToken: medianOf(a.js), Label: a.label, Run: a.run})
	}
	for i := range out.Series {
		slices.SortStableFunc(out.Series[i].Points, func(a, b DecidedPoint) int { return cmp.Compare(a.Latency, b.Latency) })
	}
	return out
}

// Figure is the frontier figure of the decided points: the decision's
// point ringed, the SLO's bound a line, the points no other point beats
// on both axes filled.
func (d *Decided) Figure(simulated bool) *plot.Frontier {
	f := &plot.Frontier{Latency: d.Latency, Basis: d.Basis, Simulated: simulated, BestLabel: d.ChosenLabel}
	if d.Bound != nil {
		f.Bounds, f.BoundLabels = []float64{*d.Bound}, []string{d.BoundLabel}
	}
	var all []DecidedPoint
	for _, s := range d.Series {
		all = append(all, s.Points...)
	}
	for _, s := range d.Series {
		fs := plot.FrontierSeries{Name: s.Name}
		for _, p := range s.Points {
			fs.Points = append(fs.Points, plot.FrontierPoint{Latency: p.Latency, JPerToken: p.JPerToken, Label: p.Label,
				Pareto: !dominated(p, all), Best: p.Run == d.Chosen})
		}
		f.Series = append(f.Series, fs)
	}
	return f
}

// DecisionFrontier is the frontier figure of rep's decision (Decided);
// nil when the decision chose nothing.
func DecisionFrontier(rep *compare.Report, runs []compare.Run) *plot.Frontier {
	d := DecidedPoints(rep, runs)
	if d == nil {
		return nil
	}
	return d.Figure(rep.Simulated)
}

// dominated reports whether another point has lower-or-equal latency and
// J/token, one of them strictly lower.
func dominated(p DecidedPoint, all []DecidedPoint) bool {
	return slices.ContainsFunc(all, func(q DecidedPoint) bool {
		return q.Latency <= p.Latency && q.JPerToken <= p.JPerToken && (q.Latency < p.Latency || q.JPerToken < p.JPerToken)
	})
}

// settingSeries names a run's series: its GPU setting, after its model,
// engine, scenario and other configuration fields where those differ
// between the rows in the statistics.
func settingSeries(rows []compare.RunRow) func(*compare.RunRow) string {
	config := func(r *compare.RunRow) string {
		parts := []string{r.Model, r.Engine, r.Scenario}
		for _, fv := range r.Configuration {
			if !strings.HasPrefix(fv.Field, "gpu_settings.") {
				parts = append(parts, strings.TrimPrefix(fv.Field, "parameters.")+" "+fv.Value)
			}
		}
		return strings.Join(parts, " · ")
	}
	configs := map[string]bool{}
	for i := range rows {
		if rows[i].Included {
			configs[config(&rows[i])] = true
		}
	}
	return func(r *compare.RunRow) string {
		s := SettingText(r.GPUSetting)
		if len(configs) > 1 {
			return config(r) + " · " + s
		}
		return s
	}
}

// SettingText is a GPU setting in a table or legend: "250 W", "default".
func SettingText(s compare.GPUSetting) string {
	if s.Text == "" {
		return compare.DefaultSetting
	}
	return s.Text
}

// finiteResult is a finite numeric result of res (nil: none), or false.
func finiteResult(res *record.Results, name string) (float64, bool) {
	if res == nil {
		return 0, false
	}
	v, ok := res.Values[name].Value.(float64)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// invalidated reports whether a failed check of res invalidates the
// metric name.
func invalidated(res *record.Results, name string) bool {
	if res == nil {
		return false
	}
	for _, r := range res.Values {
		if r.Kind == "check" && r.Passed != nil && !*r.Passed && r.InvalidatesMetric(name) {
			return true
		}
	}
	return false
}

// medianOf is the median of values (at least one).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
