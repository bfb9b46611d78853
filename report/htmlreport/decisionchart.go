package htmlreport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"
)

// basisMetrics are the result metrics of each J/token basis.
var basisMetrics = map[string]string{
	compare.BasisSteady:   "steady_state_j_per_token",
	compare.BasisFormal:   "formal_j_per_token",
	compare.BasisGoodTok:  "j_per_good_token",
	compare.BasisGoodTokS: "j_per_good_token_steady",
}

// basisWords names a J/token basis in words, as every figure that depends
// on it is labelled.
func basisWords(b string) string {
	switch b {
	case compare.BasisSteady:
		return "steady state"
	case compare.BasisFormal:
		return "formal window"
	case compare.BasisGoodTok:
		return "per good token, formal window"
	case compare.BasisGoodTokS:
		return "per good token, steady state"
	}
	return b
}

// impliedLatency is the latency the decision's SLO speaks of: its first
// bound's metric at the percentile its attainment target implies
// (tpot_p90_ms for TPOT at 0.9), and that bound; without an SLO the
// decision's own latency metric and bound.
func impliedLatency(d *compare.Decision) (string, *float64) {
	if d.SLO == nil {
		return d.LatencyMetric, d.LatencyBound
	}
	pct := d.SLO.Percentile
	if pct == "" {
		pct = compare.PercentileName(d.SLO.Attainment)
	}
	m := d.SLO.LatencyMetric()
	if i := strings.LastIndex(m, "_p"); i >= 0 {
		m = m[:i] + "_" + pct + "_ms"
	}
	b := d.SLO.Bound()
	return m, &b
}

// sloLineLabel names the SLO's line: "SLO: TPOT p90 ≤ 13 ms (90 % of
// requests)".
func sloLineLabel(d *compare.Decision, metric string, bound float64) string {
	if d.SLO == nil {
		return "bound " + metric + " ≤ " + strconv.FormatFloat(bound, 'g', -1, 64) + " ms"
	}
	name := strings.ToUpper(strings.SplitN(metric, "_", 2)[0])
	pct := d.SLO.Percentile
	if pct == "" {
		pct = compare.PercentileName(d.SLO.Attainment)
	}
	return fmt.Sprintf("SLO: %s %s ≤ %s ms (%s of requests)", name, pct, strconv.FormatFloat(bound, 'g', -1, 64),
		strconv.FormatFloat(d.SLO.Attainment*100, 'g', -1, 64)+" %")
}

// decidedPoint is the points' figures gathered from their runs.
type decidedPoint struct {
	series, label, run string
	js, lats           []float64
}

// fromDecision draws every point the decision weighed on its basis: the
// J/token of that basis against the latency its SLO's target implies
// (p90 for 0.9), one series per GPU setting (and configuration, where
// configurations differ), each point labelled as every view labels it
// ("c32 · 250 W"), repetitions as medians, the SLO's bound a line and
// the decision's run ringed. Nil when the decision has no basis (no
// choice).
func fromDecision(rep *compare.Report, runs []compare.Run) (*frontier, string) {
	d := rep.Decision
	if d == nil || !d.Chosen || basisMetrics[d.Basis] == "" {
		return nil, ""
	}
	results := map[string]*record.Results{}
	for _, r := range runs {
		results[r.Meta.RunID] = r.Results
	}
	metric, bound := impliedLatency(d)
	if !slices.ContainsFunc(rep.Runs, func(r compare.RunRow) bool { _, ok := number(results[r.RunID], metric); return ok }) {
		metric, bound = d.LatencyMetric, d.LatencyBound
	}
	jName := basisMetrics[d.Basis]
	seriesOf := settingSeries(rep.Runs)
	var pts []*decidedPoint
	byKey := map[string]*decidedPoint{}
	for i := range rep.Runs {
		row := &rep.Runs[i]
		if !row.Included || (d.Basis == compare.BasisSteady || d.Basis == compare.BasisGoodTokS) && !row.Uses(compare.ValueSteady) {
			continue
		}
		res := results[row.RunID]
		inv := report.InvalidatedBy(res)
		j, jok := number(res, jName)
		lat, lok := number(res, metric)
		if !jok || !lok || len(inv[jName]) > 0 || len(inv[metric]) > 0 {
			continue
		}
		s := seriesOf(row)
		key := s + "\x00" + row.Label
		pt := byKey[key]
		if pt == nil {
			pt = &decidedPoint{series: s, label: row.Label, run: row.RunID}
			byKey[key] = pt
			pts = append(pts, pt)
		}
		pt.js, pt.lats = append(pt.js, j), append(pt.lats, lat)
	}
	if len(pts) == 0 {
		return nil, ""
	}
	words := basisWords(d.Basis)
	fr := &frontier{XName: metric, YName: "J/token (" + words + ")", Best: d.Run}
	if bound != nil {
		fr.Bound, fr.BoundLabel = bound, sloLineLabel(d, metric, *bound)
	}
	bySeries := map[string]*frontierSeries{}
	var order []string
	for _, pt := range pts {
		s := bySeries[pt.series]
		if s == nil {
			s = &frontierSeries{Name: pt.series}
			bySeries[pt.series] = s
			order = append(order, pt.series)
		}
		s.X, s.Y = append(s.X, median(pt.lats)), append(s.Y, median(pt.js))
		s.Runs, s.Labels = append(s.Runs, pt.run), append(s.Labels, pt.label)
	}
	for _, k := range order {
		sortPoints(bySeries[k])
		fr.Series = append(fr.Series, *bySeries[k])
	}
	note := fmt.Sprintf("Every point the decision weighed, on its basis: J/token (%s) against %s, the latency its SLO's target implies; one series per GPU setting, each point labelled by its load and setting (repetitions as medians); the ringed point is the decision's choice, run %s (%s); both axes start at zero.",
		words, metric, d.Run, orDash(d.Label))
	if d.SLO == nil {
		note = fmt.Sprintf("Every point the decision weighed, on its basis: J/token (%s) against %s; one series per GPU setting, each point labelled by its load and setting (repetitions as medians); the ringed point is the decision's choice, run %s (%s); both axes start at zero.",
			words, metric, d.Run, orDash(d.Label))
	}
	if fr.Bound != nil {
		note += " The dashed line is the bound (" + fr.BoundLabel + ")."
	}
	return fr, note
}

// settingSeries names a run's series: its GPU setting, after its model,
// engine, scenario and other configuration fields where those differ
// between the rows.
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
		s := settingText(r.GPUSetting)
		if len(configs) > 1 {
			return config(r) + " · " + s
		}
		return s
	}
}

// settingText is a GPU setting in a table or legend: "250 W",
// "default".
func settingText(s compare.GPUSetting) string {
	if s.Text == "" {
		return compare.DefaultSetting
	}
	return s.Text
}

// median of values (at least one).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// gpuSettingsField prefixes the configuration fields of run.json's
// gpu_settings.
const gpuSettingsField = "gpu_settings."

// configSetting is the GPU setting among a configuration's fields, as
// settingText writes it: "250 W", "250 W, SM 1410 MHz"; "default" when
// it sets none.
func configSetting(fv []compare.FieldValue) string {
	var parts []string
	for _, f := range []struct{ field, prefix, suffix string }{
		{"power_limit_w", "", " W"}, {"clocks_mhz", "SM ", " MHz"}, {"mem_clocks_mhz", "mem ", " MHz"}} {
		for _, v := range fv {
			if v.Field == gpuSettingsField+f.field && v.Value != "" && v.Value != "-" {
				parts = append(parts, f.prefix+v.Value+f.suffix)
			}
		}
	}
	if len(parts) == 0 {
		return compare.DefaultSetting
	}
	return strings.Join(parts, ", ")
}

// gpuChoiceText is a GPU-settings choice's setting in words: "power limit
// 300 W", "the default power limit, SM clocks 1410 MHz".
func gpuChoiceText(c compare.GPUSettingsChoice) string {
	s := "power limit " + c.PowerLimitW + " W"
	if c.PowerLimitW == "-" || c.PowerLimitW == "" {
		s = "the default power limit"
	}
	if c.ClocksMHz != "-" && c.ClocksMHz != "" {
		s += ", SM clocks " + c.ClocksMHz + " MHz"
	}
	if c.MemClocksMHz != "-" && c.MemClocksMHz != "" {
		s += ", memory clocks " + c.MemClocksMHz + " MHz"
	}
	return s
}
