package compare

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// settingField is a GPU setting's configuration field of run.json's
// gpu_settings (compare-1.5.yaml lists them).
func settingField(s record.GPUSetting) string { return "gpu_settings." + s.Field }

// withoutSettings is a copy of a run's configuration fields without its
// GPU settings (record.GPUSettingsTable's fields).
func withoutSettings(setting map[string]string) map[string]string {
	rest := maps.Clone(setting)
	for _, st := range record.GPUSettingsTable() {
		delete(rest, settingField(st))
	}
	return rest
}

// chosen are c's fields of the settings, in record.GPUSettingsTable's
// order.
func (c *GPUSettingsChoice) chosen() []*string {
	return []*string{&c.PowerLimitW, &c.ClocksMHz, &c.MemClocksMHz}
}

// locked reports whether the setting locks a clock.
func (s GPUSetting) locked() bool { return s.SMClocksMHz != nil || s.MemClocksMHz != nil }

// DefaultSetting is the text of the GPU setting of a run that changed
// none (run.json has no gpu_settings, or asked for nothing).
const DefaultSetting = "default"

// GPUSetting is the GPU setting a run applied, from run.json's
// gpu_settings: the power limit and the locked SM and memory clocks. It
// is part of the configuration: every view names it beside the load
// (PointLabel), and runs that differ in it are different configurations.
type GPUSetting struct {
	// Text says it in short: "250 W", "250 W, SM 1410 MHz", "SM 210–1410
	// MHz", "0=250,1=300 W" (a limit per device), or "default".
	Text string `json:"text"`
	// Default is true when the run changed no setting.
	Default bool `json:"default"`
	// PowerLimitW is the power limit asked, when one value for every GPU
	// (nil: none asked, or a different one per device: PowerLimit says
	// it as asked).
	PowerLimitW *float64 `json:"power_limit_w,omitempty"`
	PowerLimit  string   `json:"power_limit,omitempty"`
	// SMClocksMHz and MemClocksMHz are the locked clocks asked, [min,
	// max] (nil: not locked).
	SMClocksMHz  []float64 `json:"sm_clocks_mhz,omitempty"`
	MemClocksMHz []float64 `json:"mem_clocks_mhz,omitempty"`
	// CapBound is whether the power cap bound in the formal stage: true
	// when it did on a GPU, false when it never did on any (every reading
	// read), nil when unknown or no cap was set.
	CapBound *bool `json:"cap_bound,omitempty"`
}

// GPUSettingOf reads the GPU setting a run recorded (run.json
// meta.gpu_settings).
func GPUSettingOf(m record.Meta) GPUSetting {
	gs := m.GPUSettings
	if gs == nil || gs.PowerLimitW == "" && gs.ClocksMHz == "" && gs.MemClocksMHz == "" {
		return GPUSetting{Text: DefaultSetting, Default: true}
	}
	s := GPUSetting{PowerLimit: gs.PowerLimitW, SMClocksMHz: clockRange(gs.ClocksMHz), MemClocksMHz: clockRange(gs.MemClocksMHz)}
	if w, err := strconv.ParseFloat(strings.TrimSpace(gs.PowerLimitW), 64); err == nil && w > 0 {
		s.PowerLimitW = &w
	}
	s.CapBound = capBound(gs)
	var parts []string
	if gs.PowerLimitW != "" {
		parts = append(parts, gs.PowerLimitW+" W")
	}
	if gs.ClocksMHz != "" {
		parts = append(parts, "SM "+rangeText(s.SMClocksMHz, gs.ClocksMHz)+" MHz")
	}
	if gs.MemClocksMHz != "" {
		parts = append(parts, "mem "+rangeText(s.MemClocksMHz, gs.MemClocksMHz)+" MHz")
	}
	s.Text = strings.Join(parts, ", ")
	return s
}

// capBound combines the devices' formal-stage verdicts: bound on one is
// bound; never bound on every one (each known) is not; else unknown.
func capBound(gs *record.GPUSettings) *bool {
	if gs.PowerLimitW == "" || len(gs.Devices) == 0 {
		return nil
	}
	never := true
	for _, d := range gs.Devices {
		switch {
		case d.Formal == nil || d.Formal.CapBound == nil:
			never = false
		case *d.Formal.CapBound:
			t := true
			return &t
		}
	}
	if !never {
		return nil
	}
	f := false
	return &f
}

// clockRange reads "MIN,MAX" (or one value) as [min, max]; nil when it
// is not that.
func clockRange(s string) []float64 {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil
	}
	out := make([]float64, 0, 2)
	for _, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	if len(out) == 1 {
		out = append(out, out[0])
	}
	return out
}

// rangeText writes a clock range: "1410" when min = max, "210–1410"
// otherwise; as asked when it could not be read.
func rangeText(r []float64, asked string) string {
	if len(r) != 2 {
		return asked
	}
	lo, hi := strconv.FormatFloat(r[0], 'g', -1, 64), strconv.FormatFloat(r[1], 'g', -1, 64)
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

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
		rest := withoutSettings(pt.rows[0].setting)
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
		for i, st := range record.GPUSettingsTable() {
			*c.chosen()[i] = display(rest[settingField(st)])
		}
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
	b.section("GPU settings: the decision's choice over GPU setting × load")
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
