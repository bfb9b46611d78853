package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DecidedPoints are every point a decision weighed, as every view draws
// them (the HTML comparison's chart, plot --frontier): the J/token of the
// decision's basis against the latency its SLO's target implies
// (tpot_p90_ms for TPOT at 0.9; without an SLO the decision's latency),
// one series per GPU setting (and configuration, where configurations
// differ), each point labelled as every view labels it ("c32 · 250 W"),
// repetitions as medians. compare owns them: the views read them, never
// recompute them from the runs' results.
type DecidedPoints struct {
	// LatencyMetric is the x metric; Basis the decision's J/token basis
	// (BasisSteady, ...) and BasisText it in short words (BasisShort).
	LatencyMetric string `json:"latency_metric"`
	Basis         string `json:"basis"`
	BasisText     string `json:"basis_text"`
	// Bound is the SLO's bound on LatencyMetric (nil: none); BoundLabel
	// names it ("SLO: TPOT p90 ≤ 13 ms (90 % of requests)").
	Bound      *float64 `json:"bound"`
	BoundLabel string   `json:"bound_label,omitempty"`
	// Run is the decision's run and Label its label.
	Run    string         `json:"run"`
	Label  string         `json:"label"`
	Series []PointsSeries `json:"series"`
}

// PointsSeries is one GPU setting's decided points, in order of latency.
type PointsSeries struct {
	Name   string         `json:"name"`
	Points []DecidedPoint `json:"points"`
}

// DecidedPoint is one decided point: its latency and J/token (medians of
// its runs), label, GPU setting, first run and run count; Chosen marks
// the decision's run, Pareto a point no other decided point beats on
// both axes.
type DecidedPoint struct {
	Latency    float64 `json:"latency"`
	JPerToken  float64 `json:"j_per_token"`
	Label      string  `json:"label"`
	GPUSetting string  `json:"gpu_setting"`
	Run        string  `json:"run"`
	Runs       int     `json:"runs"`
	Chosen     bool    `json:"chosen"`
	Pareto     bool    `json:"pareto"`
}

// pointBasisMetrics are the result metrics of each J/token basis a
// decided point is drawn on.
var pointBasisMetrics = map[string]string{
	BasisSteady:   "steady_state_j_per_token",
	BasisFormal:   "formal_j_per_token",
	BasisGoodTok:  "j_per_good_token",
	BasisGoodTokS: "j_per_good_token_steady",
}

// impliedLatency is the latency a decision's SLO speaks of: its first
// bound's metric at the percentile its attainment target implies
// (tpot_p90_ms for TPOT at 0.9), and that bound; without an SLO the
// decision's own latency metric and bound.
func impliedLatency(d *Decision) (string, *float64) {
	if d.SLO == nil {
		return d.LatencyMetric, d.LatencyBound
	}
	b := d.SLO.Bound()
	return d.SLO.LatencyMetric(), &b
}

// sloLineLabel names the SLO's line: "SLO: TPOT p90 ≤ 13 ms (90 % of
// requests)"; a bound without an SLO (--latency-max) "bound tpot_p50_ms
// ≤ 400 ms".
func sloLineLabel(d *Decision, metric string, bound float64) string {
	b := strconv.FormatFloat(bound, 'g', -1, 64)
	if d.SLO == nil {
		return "bound " + metric + " ≤ " + b + " ms"
	}
	name := strings.ToUpper(strings.SplitN(metric, "_", 2)[0])
	pctl := cmp.Or(d.SLO.Percentile, PercentileName(d.SLO.Attainment))
	return fmt.Sprintf("SLO: %s %s ≤ %s ms (%s %% of requests)", name, pctl, b, strconv.FormatFloat(d.SLO.Attainment*100, 'g', -1, 64))
}

// pointAcc gathers a decided point's runs.
type pointAcc struct {
	series, label, setting, run string
	js, lats                    []*float64
}

// decidedPoints gathers every point the decision d weighed from the
// runs' results: the rows in the statistics, a J/token a flag or a failed
// check removes left out (as the decision leaves it out; a latency a
// failed check invalidates is still drawn, the decision decides on it);
// nil when the decision chose nothing (it then has no basis) or no run
// has both figures.
func decidedPoints(d *Decision, rows []RunRow, runs []Run) *DecidedPoints {
	if d == nil || !d.Chosen || pointBasisMetrics[d.Basis] == "" {
		return nil
	}
	byDir := map[string]*Run{}
	for i := range runs {
		byDir[runs[i].Dir] = &runs[i]
	}
	result := func(r *RunRow, name string) (*float64, bool) {
		run := byDir[r.Dir]
		if run == nil {
			return nil, false
		}
		v, ok := numberOK(run, name)
		return ptr(v, ok), ok
	}
	metric, bound := impliedLatency(d)
	if !slices.ContainsFunc(rows, func(r RunRow) bool { _, ok := result(&r, metric); return ok }) {
		metric, bound = d.LatencyMetric, d.LatencyBound
	}
	accs := pointAccs(d, rows, byDir, metric, result)
	if len(accs) == 0 {
		return nil
	}
	out := &DecidedPoints{LatencyMetric: metric, Basis: d.Basis, BasisText: BasisShort(d.Basis), Run: d.Run, Label: d.Label, Series: []PointsSeries{}}
	if bound != nil {
		out.Bound, out.BoundLabel = bound, sloLineLabel(d, metric, *bound)
	}
	idx := map[string]int{}
	for _, a := range accs {
		i, ok := idx[a.series]
		if !ok {
			i = len(out.Series)
			idx[a.series] = i
			out.Series = append(out.Series, PointsSeries{Name: a.series})
		}
		out.Series[i].Points = append(out.Series[i].Points, DecidedPoint{Latency: *medianOf(a.lats), JPerToken: *medianOf(a.js), Label: a.label,
			GPUSetting: a.setting, Run: a.run, Runs: len(a.js), Chosen: a.run == d.Run})
	}
	for i := range out.Series {
		slices.SortStableFunc(out.Series[i].Points, func(a, b DecidedPoint) int { return cmp.Compare(a.Latency, b.Latency) })
	}
	out.markPareto()
	return out
}

// pointAccs gathers the runs of each decided point (series and label),
// in order of first run.
func pointAccs(d *Decision, rows []RunRow, byDir map[string]*Run, metric string, result func(*RunRow, string) (*float64, bool)) []*pointAcc {
	jName := pointBasisMetrics[d.Basis]
	steady := d.Basis == BasisSteady || d.Basis == BasisGoodTokS
	seriesOf := settingSeries(rows)
	var accs []*pointAcc
	byKey := map[string]*pointAcc{}
	for i := range rows {
		row := &rows[i]
		if !row.Included || steady && !row.Uses(ValueSteady) {
			continue
		}
		j, jok := result(row, jName)
		lat, lok := result(row, metric)
		if !jok || !lok || invalidating(byDir[row.Dir], jName) != "" {
			continue
		}
		s := seriesOf(row)
		key := s + "\x00" + row.Label
		a := byKey[key]
		if a == nil {
			a = &pointAcc{series: s, label: row.Label, setting: SettingText(row.GPUSetting), run: row.RunID}
			byKey[key] = a
			accs = append(accs, a)
		}
		a.js, a.lats = append(a.js, j), append(a.lats, lat)
	}
	return accs
}

// markPareto marks the decided points no other point (of any series)
// beats: lower-or-equal latency and J/token, one of them strictly lower.
func (dp *DecidedPoints) markPareto() {
	var all []DecidedPoint
	for _, s := range dp.Series {
		all = append(all, s.Points...)
	}
	for _, s := range dp.Series {
		for i := range s.Points {
			p := &s.Points[i]
			p.Pareto = !slices.ContainsFunc(all, func(q DecidedPoint) bool {
				return q.Latency <= p.Latency && q.JPerToken <= p.JPerToken && (q.Latency < p.Latency || q.JPerToken < p.JPerToken)
			})
		}
	}
}

// settingSeries names a run's series: its GPU setting, after its model,
// engine, scenario and other configuration fields where those differ
// between the rows in the statistics.
func settingSeries(rows []RunRow) func(*RunRow) string {
	config := func(r *RunRow) string {
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
	return func(r *RunRow) string {
		s := SettingText(r.GPUSetting)
		if len(configs) > 1 {
			return config(r) + " · " + s
		}
		return s
	}
}

// SettingText is a GPU setting in a table or legend: "250 W", "default".
func SettingText(s GPUSetting) string {
	return cmp.Or(s.Text, DefaultSetting)
}
