package htmlreport

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"

	"github.com/joulebench/joulebench/internal/num"
)

// compareView is what the comparison template shows: compare's report as
// built, and a brief section per run.
type compareView struct {
	Rep          *compare.Report
	Summary      string
	FrontierNote string
	Briefs       []*runView
}

// frontier is the energy–latency chart: one series per configuration, a
// point per run (its load point).
type frontier struct {
	XName  string           `json:"x_name"`
	YName  string           `json:"y_name"`
	Series []frontierSeries `json:"series"`
	// Bound is the SLO's bound on the x metric (drawn as a line); nil
	// when none. BoundLabel says what it is.
	Bound      *float64 `json:"bound,omitempty"`
	BoundLabel string   `json:"bound_label,omitempty"`
	// Best is the run the decision chose (its point is ringed).
	Best string `json:"best,omitempty"`
}

type frontierSeries struct {
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
	Runs []string  `json:"runs"`
	// Labels name each point by its load (c16, 2.5 req/s, unlimited).
	Labels []string `json:"labels"`
}

// frontierLatencies are the latency metrics the chart's x axis may use,
// the first that some run has.
var frontierLatencies = []string{"tpot_p50_ms", "itl_p50_ms", "e2e_latency_p50_ms", "ttft_p50_ms"}

func buildCompare(rep *compare.Report, runs []compare.Run) (*compareView, *frontier) {
	cv := &compareView{Rep: rep}
	included, flagged := 0, 0
	for _, r := range rep.Runs {
		if r.Included {
			included++
		}
		if len(r.Flags) > 0 {
			flagged++
		}
	}
	cv.Summary = fmt.Sprintf("Comparison (%s): %d benchmark run(s), %d in the statistics, %d flagged (%d out entirely); %d asiai engine row(s).",
		rep.CompareProfile, len(rep.Runs), included, flagged, len(rep.Runs)-included, len(rep.Asiai))
	for _, r := range runs {
		cv.Briefs = append(cv.Briefs, brief(r))
	}
	fr, note := buildFrontier(rep, runs)
	cv.FrontierNote = note
	if fr != nil && rep.Decision != nil && rep.Decision.Chosen {
		fr.Best = rep.Decision.Run
	}
	return cv, fr
}

// buildAsiai plots each asiai engine row at (median tok/s, W): one series
// per engine, so that faster and leaner read off one chart. Nil when no
// row has both.
func buildAsiai(rows []compare.AsiaiRow) *frontier {
	fr := &frontier{XName: "median tok/s", YName: "W"}
	for _, a := range rows {
		if a.TokS == nil || a.PowerW == nil {
			continue
		}
		fr.Series = append(fr.Series, frontierSeries{Name: a.Model + " · " + a.Engine, X: []float64{*a.TokS}, Y: []float64{*a.PowerW}, Runs: a.RunIDs})
	}
	if len(fr.Series) == 0 {
		return nil
	}
	return fr
}

// brief is a run's section in the comparison: headline, checks and
// provenance, from its evaluated results.
func brief(r compare.Run) *runView {
	m := r.Meta
	v := &runView{Anchor: anchor(m.RunID), Meta: m, Simulated: m.Simulated}
	v.Title = fmt.Sprintf("run %s · %s · %s · %s", m.RunID, orDash(m.Profile.Name), orDash(m.Engine.Kind), orDash(m.Engine.Model))
	if m.Simulated {
		v.SimNote = report.SimulatedNoteOf(m) // naming the run's simulated hardware
	}
	if m.PowerReplayed() {
		v.Replayed = "REPLAYED: power comes from an archived power.csv replayed" + noteSuffix(m.Telemetry.Note)
	}
	if r.Results != nil {
		if r.Results.Excluded {
			v.Excluded = r.Results.ExcludeReason
		}
		v.results(r.Results)
	}
	v.Boundary = boundary(m)
	v.Prov = provenance(m)
	return v
}

// fromFrontier draws compare's energy–latency frontier (load points of
// one configuration, medians of repetitions, the basis compare chose):
// one series per model · engine · scenario · configuration, its points in
// order of latency. nil when compare found no configuration measured at
// two loads or more.
func fromFrontier(points []compare.FrontierPoint) (*frontier, string) {
	if len(points) == 0 {
		return nil, ""
	}
	fr := &frontier{XName: points[0].LatencyMetric, YName: "J/token (" + points[0].Basis + ")"}
	if b := points[0].LatencyBound; b != nil {
		fr.Bound = b
		fr.BoundLabel = fmt.Sprintf("bound %s ≤ %s ms", points[0].LatencyMetric, strconv.FormatFloat(*b, 'g', -1, 64))
		if points[0].SLO != nil {
			fr.BoundLabel = "SLO: " + points[0].SLO.String()
		}
	}
	byGroup := map[string]*frontierSeries{}
	var order []string
	for _, pt := range points {
		if pt.Latency == nil || pt.JPerToken == nil {
			continue
		}
		name := pt.Model + " · " + pt.Engine + " · " + pt.Scenario
		for _, fv := range pt.Configuration {
			name += " · " + fv.Field + " " + fv.Value
		}
		s := byGroup[name]
		if s == nil {
			s = &frontierSeries{Name: name}
			byGroup[name] = s
			order = append(order, name)
		}
		s.X, s.Y, s.Runs = append(s.X, *pt.Latency), append(s.Y, *pt.JPerToken), append(s.Runs, pt.RunID)
		s.Labels = append(s.Labels, shortLoad(pt.Load))
		if pt.LatencyBound == nil || fr.Bound == nil || *pt.LatencyBound != *fr.Bound || pt.LatencyMetric != fr.XName {
			fr.Bound, fr.BoundLabel = nil, "" // one line only when every point has the same bound
		}
	}
	if len(order) == 0 {
		return nil, ""
	}
	for _, k := range order {
		s := byGroup[k]
		sortPoints(s)
		fr.Series = append(fr.Series, *s)
	}
	note := fmt.Sprintf("The energy–latency frontier compare computed: each configuration's load points at (%s, J/token on basis %s; repetitions as medians), joined in order of latency, each labelled by its load; both axes start at zero. %s.", fr.XName, points[0].Basis, compare.LatencyAxisText(&points[0]))
	if fr.Bound != nil {
		note += " The dashed line is the bound (" + fr.BoundLabel + ")."
	}
	return fr, note
}

// shortLoad names a load point briefly for a chart label: c16 for a
// concurrency, 2.5 req/s for a rate, else its mode.
func shortLoad(load map[string]any) string {
	if c, ok := load["concurrency"].(float64); ok && c > 0 {
		return "c" + strconv.FormatFloat(c, 'g', -1, 64)
	}
	for _, k := range []string{"rate", "request_rate"} {
		if r, ok := load[k].(float64); ok && r > 0 {
			return strconv.FormatFloat(r, 'g', 4, 64) + " req/s"
		}
	}
	if m, ok := load["mode"].(string); ok && m != "" {
		return m
	}
	return compare.LoadText(load)
}

// buildFrontier plots each run of the comparison's runs table at (its
// latency, its full-lifecycle J/token as compare computed it), one series
// per configuration (scenario, model, engine, size group): runs of one
// configuration that differ in load are the points of its frontier.
func buildFrontier(rep *compare.Report, runs []compare.Run) (*frontier, string) {
	if fr, note := fromDecision(rep); fr != nil {
		return fr, note
	}
	if fr, note := fromFrontier(rep.Frontier); fr != nil {
		return fr, note
	}
	results := map[string]*record.Results{}
	metas := map[string]record.Meta{}
	for _, r := range runs {
		results[r.Meta.RunID], metas[r.Meta.RunID] = r.Results, r.Meta
	}
	xName := ""
	for _, name := range frontierLatencies {
		for _, row := range rep.Runs {
			if _, ok := number(results[row.RunID], name); ok {
				xName = name
				break
			}
		}
		if xName != "" {
			break
		}
	}
	if xName == "" {
		return nil, "No run has a latency metric (" + strings.Join(frontierLatencies, ", ") + "): no energy–latency chart."
	}
	// The full-lifecycle J/token where every run has it; else the formal
	// window's, which every run has (a run against an external server has
	// no lifecycle to measure).
	yName, yOf := "full-lifecycle J/token", func(row compare.RunRow) (float64, bool) {
		if row.FullJPerToken == nil || !row.Uses(compare.ValueFull) {
			return 0, false
		}
		return *row.FullJPerToken, true
	}
	for _, row := range rep.Runs {
		if _, ok := number(results[row.RunID], xName); ok && row.Included {
			if _, ok := yOf(row); !ok {
				yName, yOf = "formal-window J/token", func(row compare.RunRow) (float64, bool) {
					if !row.Included {
						return 0, false
					}
					return number(results[row.RunID], "formal_j_per_token")
				}
				break
			}
		}
	}
	fr := &frontier{XName: xName, YName: yName}
	byConfig := map[string]*frontierSeries{}
	var order []string
	for _, row := range rep.Runs {
		x, ok := number(results[row.RunID], xName)
		y, yok := yOf(row)
		if !ok || !yok {
			continue
		}
		key := configName(row, metas[row.RunID])
		s := byConfig[key]
		if s == nil {
			s = &frontierSeries{Name: key}
			byConfig[key] = s
			order = append(order, key)
		}
		s.X, s.Y, s.Runs = append(s.X, x), append(s.Y, y), append(s.Runs, row.RunID)
		s.Labels = append(s.Labels, shortLoad(loadOf(metas[row.RunID].Parameters)))
	}
	most := 0
	for _, k := range order {
		s := byConfig[k]
		sortPoints(s)
		fr.Series = append(fr.Series, *s)
		most = max(most, len(s.X))
	}
	note := fmt.Sprintf("Each run in the statistics at (%s, %s), one series per configuration (scenario · model · engine · size group · profile · dataset · max_tokens; the load may differ), each labelled by its load; both axes start at zero.", xName, yName)
	if most < 2 {
		note += " No configuration has two load points yet, so there is no frontier line: run one configuration at several loads to draw one."
	} else {
		note += " A configuration's load points are joined in order of latency: its energy–latency frontier."
	}
	return fr, note
}

// loadOf is a run's load parameters (mode, concurrency, rate) as
// compare.LoadText reads them.
func loadOf(params map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"mode", "concurrency", "rate", "request_rate"} {
		switch v := params[k].(type) {
		case float64, string:
			out[k] = v
		case int:
			out[k] = float64(v)
		}
	}
	return out
}

// configName names a run's configuration for the chart: what compare
// groups by, and the profile, dataset and max_tokens, so that runs that
// differ in these are not drawn as load points of one frontier.
func configName(row compare.RunRow, m record.Meta) string {
	parts := []string{row.Scenario, row.Model, row.Engine, row.SizeGroup, orDash(m.Profile.Name), orDash(m.RequestSet.Source)}
	if mt, ok := m.Parameters["max_tokens"]; ok {
		parts = append(parts, "max_tokens "+paramString(mt))
	}
	return strings.Join(parts, " · ")
}

func sortPoints(s *frontierSeries) {
	idx := make([]int, len(s.X))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.X[a], s.X[b]) })
	x, y, r, l := make([]float64, len(idx)), make([]float64, len(idx)), make([]string, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		x[i], y[i], r[i] = s.X[j], s.Y[j], s.Runs[j]
		if j < len(s.Labels) {
			l[i] = s.Labels[j]
		}
	}
	s.X, s.Y, s.Runs, s.Labels = x, y, r, l
}

// number is a finite numeric result, or false.
func number(res *record.Results, name string) (float64, bool) {
	if res == nil {
		return 0, false
	}
	return num.Finite(res.Values[name].Value)
}
