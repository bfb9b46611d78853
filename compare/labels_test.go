package compare

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestPointLabelNamesTheGPUSetting(t *testing.T) {
	yes, no := true, false
	bound := func(b *bool) record.GPUSettingsDevice {
		return record.GPUSettingsDevice{Formal: &record.GPUSettingsBound{CapBound: b}}
	}
	c32 := map[string]any{"mode": "concurrency", "concurrency": 32.0}
	for _, tc := range []struct {
		name      string
		gs        *record.GPUSettings
		load      map[string]any
		label     string
		watts     float64 // 0: nil
		sm        []float64
		capBound  *bool
		isDefault bool
	}{
		{"none recorded", nil, c32, "c32 · default", 0, nil, nil, true},
		{"a cap that bound", &record.GPUSettings{PowerLimitW: "250", Devices: []record.GPUSettingsDevice{bound(&no), bound(&yes)}}, c32, "c32 · 250 W", 250, nil, &yes, false},
		{"a cap that never bound", &record.GPUSettings{PowerLimitW: "350", Devices: []record.GPUSettingsDevice{bound(&no)}}, c32, "c32 · 350 W", 350, nil, &no, false},
		{"unknown on one device", &record.GPUSettings{PowerLimitW: "350", Devices: []record.GPUSettingsDevice{bound(&no), bound(nil)}}, c32, "c32 · 350 W", 350, nil, nil, false},
		{"cap and clocks", &record.GPUSettings{PowerLimitW: "300", ClocksMHz: "1410,1410"}, map[string]any{"rate": 2.5}, "2.5 req/s · 300 W, SM 1410 MHz", 300, []float64{1410, 1410}, nil, false},
		{"a limit per device", &record.GPUSettings{PowerLimitW: "0=250,1=300", ClocksMHz: "210,1410"}, map[string]any{"mode": "all_at_once"}, "all_at_once · 0=250,1=300 W, SM 210–1410 MHz", 0, []float64{210, 1410}, nil, false},
		{"no load fields", &record.GPUSettings{MemClocksMHz: "5001"}, map[string]any{}, "mem 5001 MHz", 0, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := GPUSettingOf(record.Meta{GPUSettings: tc.gs})
			if got := PointLabel(tc.load, s); got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
			if s.Default != tc.isDefault {
				t.Errorf("default %v, want %v", s.Default, tc.isDefault)
			}
			switch {
			case tc.watts == 0 && s.PowerLimitW != nil:
				t.Errorf("power_limit_w %v, want none", *s.PowerLimitW)
			case tc.watts != 0 && (s.PowerLimitW == nil || *s.PowerLimitW != tc.watts):
				t.Errorf("power_limit_w %v, want %v", s.PowerLimitW, tc.watts)
			}
			if len(tc.sm) != len(s.SMClocksMHz) || len(tc.sm) == 2 && (tc.sm[0] != s.SMClocksMHz[0] || tc.sm[1] != s.SMClocksMHz[1]) {
				t.Errorf("sm clocks %v, want %v", s.SMClocksMHz, tc.sm)
			}
			if (tc.capBound == nil) != (s.CapBound == nil) || tc.capBound != nil && *tc.capBound != *s.CapBound {
				t.Errorf("cap_bound %v, want %v", s.CapBound, tc.capBound)
			}
		})
	}
}

func TestPercentileName(t *testing.T) {
	for a, want := range map[float64]string{0.9: "p90", 0.99: "p99", 0.995: "p99.5", 0.5: "p50", 0.95: "p95"} {
		if got := PercentileName(a); got != want {
			t.Errorf("PercentileName(%v) = %q, want %q", a, got, want)
		}
	}
}
