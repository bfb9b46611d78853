package compare

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// settingField is a GPU setting's configuration field of run.json's
// gpu_settings (compare-1.5.yaml lists them).
func settingField(s record.GPUSetting) string { return "gpu_settings." + s.Field }

// chosen are c's fields of the settings, in record.GPUSettingsTable's
// order.
func (c *GPUSettingsChoice) chosen() []*string {
	return []*string{&c.PowerLimitW, &c.ClocksMHz, &c.MemClocksMHz}
}

// GPUSettingsChoice answers, for runs of one scenario, model, engine and
// configuration that differ in their GPU settings (power limit, locked
// clocks), which GPU setting × load has the lowest J/token meeting the
// SLO: the frontier's SLO (--latency-max, --slo-attainment), weighed over
// every setting × load point, one load or several.
type GPUSettingsChoice struct {
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	Engine   string `json:"engine"`
	// PowerLimitW, ClocksMHz and MemClocksMHz are the chosen setting
	// ("-": the default).
	PowerLimitW  string `json:"power_limit_w"`
	ClocksMHz    string `json:"clocks_mhz"`
	MemClocksMHz string `json:"mem_clocks_mhz"`
	// Load is the chosen point's load; RunID and Dir its (first) run.
	Load  map[string]any `json:"load"`
	RunID string         `json:"run_id"`
	Dir   string         `json:"dir"`
	// JPerToken is its J/token on Basis; Latency its LatencyMetric.
	JPerToken     *float64 `json:"j_per_token"`
	Basis         string   `json:"basis"`
	LatencyMetric string   `json:"latency_metric"`
	Latency       *float64 `json:"latency"`
	// SLO says whether an SLO applied; without one the choice is the
	// lowest J/token of all points. MeetingSLO of Points met it; none
	// meeting it leaves the choice empty (RunID "").
	SLO        bool `json:"slo"`
	Points     int  `json:"points"`
	MeetingSLO int  `json:"meeting_slo"`
}

// gpuSettingsChoices builds the choices of every group of runs that differ
// in their GPU settings.
func (p *Profile) gpuSettingsChoices(rows []RunRow, runs []Run, o FrontierOptions) []GPUSettingsChoice {
	if o.Latency == "" {
		o.Latency = DefaultLatency
	}
	if o.Attainment <= 0 {
		o.Attainment = 0.99
	}
	byDir := map[string]*Run{}
	for i := range runs {
		byDir[runs[i].Dir] = &runs[i]
	}
	type point struct {
		pt FrontierPoint
		// vals are the settings' values, in the table's order; setting
		// is them joined.
		vals    []string
		setting string
		js      map[string][]*float64
		lats    []*float64
	}
	table := record.GPUSettingsTable()
	groups := map[string][]*point{}
	var order []string
	for i := range rows {
		r := &rows[i]
		run := byDir[r.Dir]
		if !r.Included || run == nil {
			continue
		}
		rest := maps.Clone(r.setting)
		vals := make([]string, len(table))
		for i, st := range table {
			vals[i] = display(rest[settingField(st)])
			delete(rest, settingField(st))
		}
		setting := strings.Join(vals, "\x00")
		g := r.Scenario + "\x00" + r.Model + "\x00" + r.Engine + "\x00" + mapKey(rest) + "\x00" + r.method.key
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		key := setting + "\x00" + mapKey(r.load)
		var pt *point
		for _, q := range groups[g] {
			if q.pt.group == key {
				pt = q
			}
		}
		if pt == nil {
			pt = &point{pt: FrontierPoint{Model: r.Model, Engine: r.Engine, Scenario: r.Scenario, Load: loadParams(r.load), RunID: r.RunID, Dir: r.Dir, group: key},
				vals: vals, setting: setting, js: map[string][]*float64{}}
			groups[g] = append(groups[g], pt)
		}
		pt.pt.Runs++
		js, _ := frontierJs(r, run) // an invalidated figure is nil: never chosen
		for b, v := range js {
			pt.js[b] = append(pt.js[b], v)
		}
		pt.lats = append(pt.lats, ptr(numberOK(run, o.Latency)))
		if att, ok := numberOK(run, "slo_attainment"); ok {
			pt.pt.SLOAttainment = &att
		}
	}
	var out []GPUSettingsChoice
	for _, g := range order {
		pts := groups[g]
		settings := map[string]bool{}
		for _, q := range pts {
			settings[q.setting] = true
		}
		if len(settings) < 2 {
			continue
		}
		basis := BasisFormal
		for _, b := range frontierBases {
			if allHave(len(pts), func(i int) []*float64 { return pts[i].js[b] }) {
				basis = b
				break
			}
		}
		c := GPUSettingsChoice{Scenario: pts[0].pt.Scenario, Model: pts[0].pt.Model, Engine: pts[0].pt.Engine, Basis: basis, LatencyMetric: o.Latency, Points: len(pts)}
		var best *point
		for _, q := range pts {
			q.pt.JPerToken, q.pt.Latency = medianOf(q.js[basis]), medianOf(q.lats)
			meets := meetsSLO(&q.pt, o)
			if meets != nil {
				c.SLO = true
			}
			if meets != nil && !*meets || q.pt.JPerToken == nil {
				continue
			}
			if meets != nil {
				c.MeetingSLO++
			}
			if best == nil || *q.pt.JPerToken < *best.pt.JPerToken {
				best = q
			}
		}
		if c.SLO && c.MeetingSLO == 0 {
			best = nil
		}
		if best != nil {
			for i, f := range c.chosen() {
				*f = best.vals[i]
			}
			c.Load, c.RunID, c.Dir = best.pt.Load, best.pt.RunID, best.pt.Dir
			c.JPerToken, c.Latency = best.pt.JPerToken, best.pt.Latency
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b GPUSettingsChoice) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine))
	})
	return out
}

// renderGPUSettings writes the choices: one sentence each.
func renderGPUSettings(b *builder, rep *Report) {
	if len(rep.GPUSettings) == 0 {
		return
	}
	b.section("GPU settings: the power limit × load with the lowest J/token meeting the SLO")
	for _, c := range rep.GPUSettings {
		what := c.Scenario + " · " + c.Model + " · " + c.Engine + ": "
		switch {
		case c.RunID == "" && c.SLO:
			what += fmt.Sprintf("none of %d setting × load points meets the SLO", c.Points)
		case c.RunID == "":
			what += "no point has a J/token"
		default:
			setting := settingText(c)
			load := LoadText(c.Load)
			if load == "" {
				load = "-"
			}
			slo := fmt.Sprintf("meeting the SLO (%d of %d points do)", c.MeetingSLO, c.Points)
			if !c.SLO {
				slo = fmt.Sprintf("no SLO given (--latency-max, slo_* parameters): lowest of %d points", c.Points)
			}
			what += fmt.Sprintf("%s at load %s: %s J/token (%s), %s %s ms; %s; run %s",
				setting, load, fmtJ(c.JPerToken), c.Basis, c.LatencyMetric, fmtF(c.Latency, 1), slo, c.RunID)
		}
		b.line(strings.TrimSpace(what))
	}
}

// settingText says c's setting: "power limit 250 W, SM clocks 900,1200
// MHz" ("the default power limit"; a lock left at its default unsaid).
func settingText(c GPUSettingsChoice) string {
	var parts []string
	for i, st := range record.GPUSettingsTable() {
		switch v := *c.chosen()[i]; {
		case st.Kind == record.GPULimit && v == "-":
			parts = append(parts, "the default "+st.Name)
		case st.Kind == record.GPULimit || v != "-":
			parts = append(parts, st.Name+" "+v+" "+st.Unit)
		}
	}
	return strings.Join(parts, ", ")
}

// allHave reports whether each of n points (js(i): its runs' J/token on
// one basis) has a median.
func allHave(n int, js func(i int) []*float64) bool {
	for i := range n {
		if medianOf(js(i)) == nil {
			return false
		}
	}
	return true
}
