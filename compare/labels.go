package compare

import (
	"math"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

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

// ShortLoad names a load briefly: c16 for a concurrency, 2.5 req/s for a
// rate, else its mode (or LoadText).
func ShortLoad(load map[string]any) string {
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
	return LoadText(load)
}

// PointLabel is the label of a run or load point in every view: its
// short load and its GPU setting, "c32 · 250 W", "c32 · default"; the
// setting alone when the run has no load fields.
func PointLabel(load map[string]any, s GPUSetting) string {
	if l := ShortLoad(load); l != "-" {
		return l + " · " + s.Text
	}
	return s.Text
}

// PercentileName is the latency percentile an attainment target implies:
// "p90" for 0.9, "p99" for 0.99, "p99.5" for 0.995.
func PercentileName(attainment float64) string {
	return "p" + strconv.FormatFloat(math.Round(attainment*1000)/10, 'f', -1, 64)
}
