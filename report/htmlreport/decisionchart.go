package htmlreport

import (
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/compare"
)

// basisWords names a J/token basis in words (compare.BasisShort).
func basisWords(b string) string { return compare.BasisShort(b) }

// settingText is a GPU setting in a table (compare.SettingText).
func settingText(s compare.GPUSetting) string { return compare.SettingText(s) }

// fromDecision draws every point the decision weighed, as compare
// decided them (compare.DecidedPoints):
// the J/token of its basis against the latency its SLO's target implies
// (p90 for 0.9), one series per GPU setting, each point labelled as
// every view labels it ("c32 · 250 W"), the SLO's bound a line and the
// decision's run ringed. Nil when the decision chose nothing.
func fromDecision(rep *compare.Report) (*frontier, string) {
	dp := rep.Points
	if dp == nil {
		return nil, ""
	}
	fr := &frontier{XName: dp.LatencyMetric, YName: "J/token (" + dp.BasisText + ")", Best: dp.Run, Bound: dp.Bound, BoundLabel: dp.BoundLabel}
	for _, s := range dp.Series {
		fs := frontierSeries{Name: s.Name}
		for _, p := range s.Points {
			fs.X, fs.Y = append(fs.X, p.Latency), append(fs.Y, p.JPerToken)
			fs.Runs, fs.Labels = append(fs.Runs, p.Run), append(fs.Labels, p.Label)
		}
		fr.Series = append(fr.Series, fs)
	}
	against := dp.LatencyMetric + ", the latency its SLO's target implies"
	if rep.Decision.SLO == nil {
		against = dp.LatencyMetric
	}
	note := fmt.Sprintf("Every point the decision weighed, on its basis: J/token (%s) against %s; one series per GPU setting, each point labelled by its load and setting (repetitions as medians); the ringed point is the decision's choice, run %s (%s); both axes start at zero.",
		dp.BasisText, against, dp.Run, orDash(dp.Label))
	if fr.Bound != nil {
		note += " The dashed line is the bound (" + fr.BoundLabel + ")."
	}
	return fr, note
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
