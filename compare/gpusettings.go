package compare

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The configuration fields of run.json's gpu_settings (compare-1.5.yaml
// lists them).
const (
	fieldPowerLimit = "gpu_settings.power_limit_w"
	fieldClocks     = "gpu_settings.clocks_mhz"
	fieldMemClocks  = "gpu_settings.mem_clocks_mhz"
)

// GPUSettingsChoice is the view over GPU settings (power limit, locked
// clocks) of runs of one scenario, model, engine and configuration that
// differ in them: how many setting × load points meet the SLO, and the
// decision's choice when it is one of them. It makes no choice of its
// own: the decision's SLO test, latency metric and J/token basis are its.
type GPUSettingsChoice struct {
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	Engine   string `json:"engine"`
	// PowerLimitW, ClocksMHz and MemClocksMHz are the chosen setting
	// ("-": the default); Setting the same in full, Label the point's.
	PowerLimitW  string     `json:"power_limit_w"`
	ClocksMHz    string     `json:"clocks_mhz"`
	MemClocksMHz string     `json:"mem_clocks_mhz"`
	Setting      GPUSetting `json:"gpu_setting"`
	Label        string     `json:"label"`
	// Load is the chosen point's load; RunID and Dir its (first) run: the
	// decision's run ("" when the decision chose none of these points:
	// Note says why).
	Load  map[string]any `json:"load"`
	RunID string         `json:"run_id"`
	Dir   string         `json:"dir"`
	// JPerToken is its J/token on Basis, the decision's (BasisText in
	// words); Latency its LatencyMetric.
	JPerToken     *float64 `json:"j_per_token"`
	Basis         string   `json:"basis"`
	BasisText     string   `json:"basis_text"`
	LatencyMetric string   `json:"latency_metric"`
	Latency       *float64 `json:"latency"`
	// SLO says whether an SLO applied; without one the decision's choice
	// is the lowest J/token of all points. MeetingSLO of Points met it.
	SLO        bool   `json:"slo"`
	Points     int    `json:"points"`
	MeetingSLO int    `json:"meeting_slo"`
	Note       string `json:"note,omitempty"`
}

// gpuSettingsChoices builds the view of every group of load points that
// differ in their GPU settings, from the decisions made over them.
func gpuSettingsChoices(points []FrontierPoint) []GPUSettingsChoice {
	groups := map[string][]*FrontierPoint{}
	var order []string
	for i := range points {
		pt := &points[i]
		if pt.dec == nil || len(pt.rows) == 0 {
			continue
		}
		rest := maps.Clone(pt.rows[0].setting)
		delete(rest, fieldPowerLimit)
		delete(rest, fieldClocks)
		delete(rest, fieldMemClocks)
		g := pt.Scenario + "\x00" + pt.Model + "\x00" + pt.Engine + "\x00" + mapKey(rest) + "\x00" + pt.method.key
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], pt)
	}
	var out []GPUSettingsChoice
	for _, g := range order {
		if c, ok := gpuSettingsChoice(groups[g]); ok {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b GPUSettingsChoice) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine))
	})
	return out
}

// gpuSettingsChoice is the view of one group's points; false when they do
// not differ in their GPU setting.
func gpuSettingsChoice(pts []*FrontierPoint) (GPUSettingsChoice, bool) {
	settings := map[string]bool{}
	for _, pt := range pts {
		settings[pt.GPUSetting.Text] = true
	}
	if len(settings) < 2 {
		return GPUSettingsChoice{}, false
	}
	p0 := pts[0]
	c := GPUSettingsChoice{Scenario: p0.Scenario, Model: p0.Model, Engine: p0.Engine, Basis: p0.Basis, BasisText: basisName(p0.Basis),
		LatencyMetric: p0.LatencyMetric, Points: len(pts)}
	var chosen *FrontierPoint
	for _, pt := range pts {
		if pt.MeetsSLO != nil {
			c.SLO = true
			if *pt.MeetsSLO {
				c.MeetingSLO++
			}
		}
		if pt.Chosen {
			chosen = pt
		}
	}
	d := p0.dec
	switch {
	case chosen != nil:
		rest := chosen.rows[0].setting
		c.PowerLimitW, c.ClocksMHz, c.MemClocksMHz = display(rest[fieldPowerLimit]), display(rest[fieldClocks]), display(rest[fieldMemClocks])
		c.Setting, c.Label, c.Load, c.RunID, c.Dir = chosen.GPUSetting, chosen.Label, chosen.Load, chosen.RunID, chosen.Dir
		c.JPerToken, c.Latency = chosen.JPerToken, chosen.Latency
	case d.Chosen:
		c.Note = fmt.Sprintf("the decision chose run %s (%s) of another configuration", d.Run, d.Label)
	default:
		c.Note = "the decision chose no point: " + cmp.Or(d.Note, "none qualifies")
	}
	return c, true
}

// renderGPUSettings writes the view: one sentence per group, naming the
// decision's choice.
func renderGPUSettings(b *builder, rep *Report) {
	if len(rep.GPUSettings) == 0 {
		return
	}
	b.section("GPU settings: the decision's choice over power limit × load")
	for _, c := range rep.GPUSettings {
		what := c.Scenario + " · " + c.Model + " · " + c.Engine + ": "
		slo := fmt.Sprintf("%d of %d setting × load points meet the SLO", c.MeetingSLO, c.Points)
		if !c.SLO {
			slo = fmt.Sprintf("no SLO given (--latency-max, slo_* parameters): the lowest of %d points", c.Points)
		}
		if c.RunID == "" {
			what += c.Note + "; " + slo
		} else {
			what += fmt.Sprintf("the decision's choice, %s (run %s): %s J/token (%s), %s %s ms; %s",
				c.Label, c.RunID, fmtJ(c.JPerToken), c.BasisText, c.LatencyMetric, fmtF(c.Latency, 2), slo)
		}
		b.line(strings.TrimSpace(what))
	}
}
