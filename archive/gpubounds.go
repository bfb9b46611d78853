package archive

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// gpuSettingsWithinBounds: run.json's gpu_settings keeps to
// checkGPUSettingsBounds.
func gpuSettingsWithinBounds(d *metaDoc) error {
	return checkGPUSettingsBounds(d.m.GPUSettings, d.at)
}

// checkGPUSettingsBounds holds run.json's gpu_settings to docs/archive-v1.md:
// watts and clocks finite and not negative, shares in [0, 1], cap_bound
// true exactly when the power cap's share is above 0. Errors give the
// value's place.
func checkGPUSettingsBounds(g *record.GPUSettings, at func(string, ...any) error) error {
	if g == nil {
		return nil
	}
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	for i, d := range g.Devices {
		for _, f := range []struct {
			key string
			v   float64
		}{{"power_limit_asked_w", d.PowerLimitAskedW}, {"power_limit_read_back_w", d.PowerLimitReadBackW},
			{"power_limit_previous_w", d.PowerLimitPreviousW}, {"power_limit_default_w", d.PowerLimitDefaultW},
			{"power_limit_min_w", d.PowerLimitMinW}, {"power_limit_max_w", d.PowerLimitMaxW}} {
			if bad(f.v) {
				return at(fmt.Sprintf("gpu_settings.devices[%d].%s %v is negative or not a number", i, f.key, f.v), "gpu_settings", "devices", i, f.key)
			}
		}
		b := d.Formal
		if b == nil {
			continue
		}
		where := func(key string) []any { return []any{"gpu_settings", "devices", i, "formal", key} }
		name := fmt.Sprintf("gpu_settings.devices[%d].formal.", i)
		switch {
		case b.Samples < 0:
			return at(fmt.Sprintf("%ssamples %d is negative", name, b.Samples), where("samples")...)
		case bad(b.PowerCapShare) || b.PowerCapShare > 1:
			return at(fmt.Sprintf("%spower_cap_share %v is outside [0, 1]", name, b.PowerCapShare), where("power_cap_share")...)
		case b.CapBound != (b.PowerCapShare > 0):
			return at(fmt.Sprintf("%scap_bound %v contradicts power_cap_share %v (bound exactly when the share is above 0)", name, b.CapBound, b.PowerCapShare), where("cap_bound")...)
		case bad(b.MeanSMClockMHz):
			return at(fmt.Sprintf("%smean_sm_clock_mhz %v is negative or not a number", name, b.MeanSMClockMHz), where("mean_sm_clock_mhz")...)
		}
		for _, r := range slices.Sorted(maps.Keys(b.OtherReasons)) {
			if v := b.OtherReasons[r]; bad(v) || v > 1 {
				return at(fmt.Sprintf("%sother_reasons.%s %v is outside [0, 1]", name, strings.TrimSpace(r), v), append(where("other_reasons"), r)...)
			}
		}
	}
	return nil
}
