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

// checkFormalBound holds one device's formal summary to its rules:
// samples and reasons_unread counts within each other, the cap's share in
// [0, 1], cap_bound true exactly when the share is above 0, and false only
// when every reading's reasons were read (else it is unknown: absent).
func checkFormalBound(b *record.GPUSettingsBound, name string, where func(string) []any, at func(string, ...any) error) error {
	share := 0.0
	if b.PowerCapShare != nil {
		share = *b.PowerCapShare
	}
	bound, known := false, b.CapBound != nil
	if known {
		bound = *b.CapBound
	}
	switch {
	case b.Samples < 0:
		return at(fmt.Sprintf("%ssamples %d is negative", name, b.Samples), where("samples")...)
	case b.ReasonsUnread < 0 || b.ReasonsUnread > b.Samples:
		return at(fmt.Sprintf("%sreasons_unread %d is outside [0, samples %d]", name, b.ReasonsUnread, b.Samples), where("reasons_unread")...)
	case math.IsNaN(share) || share < 0 || share > 1:
		return at(fmt.Sprintf("%spower_cap_share %v is outside [0, 1]", name, share), where("power_cap_share")...)
	case bound != (share > 0):
		return at(fmt.Sprintf("%scap_bound %v contradicts power_cap_share %v (bound exactly when the share is above 0)", name, capBoundString(b.CapBound), share), where("cap_bound")...)
	case known && !bound && b.ReasonsUnread > 0:
		return at(fmt.Sprintf("%scap_bound false though the clock-event reasons of %d readings were not read (unknown: cap_bound absent)", name, b.ReasonsUnread), where("cap_bound")...)
	case b.MeanSMClockMHz < 0 || math.IsNaN(b.MeanSMClockMHz) || math.IsInf(b.MeanSMClockMHz, 0):
		return at(fmt.Sprintf("%smean_sm_clock_mhz %v is negative or not a number", name, b.MeanSMClockMHz), where("mean_sm_clock_mhz")...)
	}
	return nil
}

func capBoundString(b *bool) string {
	if b == nil {
		return "absent (unknown)"
	}
	return fmt.Sprint(*b)
}

// checkGPUSettingsBounds holds run.json's gpu_settings to docs/archive-v1.md:
// watts and clocks finite and not negative, shares in [0, 1], cap_bound
// true exactly when the power cap's share is above 0. Errors give the
// value's place.
func checkGPUSettingsBounds(g *record.GPUSettings, at func(string, ...any) error) error {
	if g == nil {
		return nil
	}
	switch {
	case g.Restore != "" && g.Restore != record.RestoreDone && g.Restore != record.RestoreFailed:
		return at(fmt.Sprintf("gpu_settings.restore %q is not %q or %q", g.Restore, record.RestoreDone, record.RestoreFailed), "gpu_settings", "restore")
	case g.Restore == record.RestoreFailed && g.RestoreError == "":
		return at(fmt.Sprintf("gpu_settings.restore %q without restore_error (what failed)", g.Restore), "gpu_settings", "restore")
	case g.Restore != record.RestoreFailed && g.RestoreError != "":
		return at(fmt.Sprintf("gpu_settings.restore_error goes with restore %q only, restore is %q", record.RestoreFailed, g.Restore), "gpu_settings", "restore_error")
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
		if err := checkFormalBound(b, name, where, at); err != nil {
			return err
		}
		for _, r := range slices.Sorted(maps.Keys(b.OtherReasons)) {
			if v := b.OtherReasons[r]; bad(v) || v > 1 {
				return at(fmt.Sprintf("%sother_reasons.%s %v is outside [0, 1]", name, strings.TrimSpace(r), v), append(where("other_reasons"), r)...)
			}
		}
	}
	return nil
}
