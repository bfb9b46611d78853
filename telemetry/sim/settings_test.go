package sim

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The model by hand, DefaultConfig: idle 60 W, full batch 450 W, ready
// extra 15 W, device skew 2 %.
//
// Full decode batch (64 of 64 slots): device 0 wants 450 - 60 = 390 W
// above idle, device 1 390·0.98 = 382.2 W. Under a 250 W limit 190 W are
// left above idle:
//
//	r0 = (190/390)^(1/3) = 0.487179^(1/3) = 0.786858  → 0.786858·1980 = 1558.0 MHz
//	r1 = (190/382.2)^(1/3) = 0.497122^(1/3) = 0.792175
//
// Both draw exactly 250 W. The engine follows the slower, r0: decode
// takes 0.9 + 0.1/0.786858 = 1.027088 times as long, prefill
// 1/0.786858 = 1.270877 times.
//
// A batch of 4 decoding: 15 + 375·4/64 = 38.4375 W above idle, far below
// the 190 W left: full clock, no slowdown, the cap does not bind.
//
// Clocks locked at 990 MHz at most, no cap: r = 0.5, power above idle
// 390·0.125 = 48.75 W for a full batch; decode 0.9 + 0.1/0.5 = 1.1 times.
func TestGPUSettingsModel(t *testing.T) {
	g := NewGPUSettings(DefaultConfig())
	for i := range 2 {
		if err := g.SetPowerLimit(i, 250); err != nil {
			t.Fatal(err)
		}
	}
	draw, r := g.operate(0, 390, true)
	if !near(draw, 190, 1e-9) || !near(r, 0.786858, 1e-6) {
		t.Errorf("device 0: %v W above idle at r %v; want 190, 0.786858", draw, r)
	}
	if smp, _ := g.Sample(0); !smp.PowerCap || !near(smp.SMClockMHz, 1558.0, 0.1) {
		t.Errorf("sample %+v", smp)
	}
	if _, r1 := g.operate(1, 382.2, true); !near(r1, 0.792175, 1e-6) {
		t.Errorf("device 1: r %v", r1)
	}
	dec, pre := g.Slowdown(64, 0, 64)
	if !near(dec, 1.027088, 1e-6) || !near(pre, 1.270877, 1e-6) {
		t.Errorf("slowdown %v, %v", dec, pre)
	}
	if draw, r := g.operate(0, 38.4375, true); draw != 38.4375 || r != 1 {
		t.Errorf("small batch: %v W at r %v", draw, r)
	}
	if smp, _ := g.Sample(0); smp.PowerCap || smp.SMClockMHz != MaxClockMHz {
		t.Errorf("small batch sample %+v", smp)
	}
	if dec, pre := g.Slowdown(4, 0, 64); dec != 1 || pre != 1 {
		t.Errorf("small batch slowdown %v, %v", dec, pre)
	}

	lock := NewGPUSettings(DefaultConfig())
	for i := range 2 {
		if err := lock.Lock(i, "clocks", gpusettings.Clocks{MinMHz: 600, MaxMHz: 990}); err != nil {
			t.Fatal(err)
		}
	}
	if draw, r := lock.operate(0, 390, true); !near(draw, 48.75, 1e-9) || r != 0.5 {
		t.Errorf("locked: %v W at r %v", draw, r)
	}
	if dec, _ := lock.Slowdown(64, 0, 64); !near(dec, 1.1, 1e-12) {
		t.Errorf("locked decode slowdown %v", dec)
	}
}

// The source under a limit: the target power is held at the limit and no
// reported reading exceeds it, noise included.
func TestSourceUnderLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RiseTauS, cfg.NoiseW = 0, 5
	g := NewGPUSettings(cfg)
	_ = g.SetPowerLimit(0, 250)
	cfg.Settings = g
	now := 0.0
	src := New(cfg, fixedLoad{Activity{Phase: PhaseReady, Running: 64, Slots: 64}}, func() float64 { return now })
	for k := range 50 {
		now = float64(k) * 0.1
		rs, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].PowerW > 250 {
			t.Fatalf("read %d: %v W above the 250 W limit", k, rs[0].PowerW)
		}
		if k > 1 && rs[1].PowerW < 442.2-5 { // 60 + 382.2 W, noise ±5 W
			t.Errorf("read %d: device 1 (no limit set) at %v W, want its full 60 + 382.2 W", k, rs[1].PowerW)
		}
	}
	if p, _ := src.ModelPower(0); p != 250 {
		t.Errorf("model power %v, want 250", p)
	}
	devs, _ := src.Devices(context.Background())
	if devs[0].PowerLimitW != 250 || devs[1].PowerLimitW != 450 {
		t.Errorf("device limits %v, %v", devs[0].PowerLimitW, devs[1].PowerLimitW)
	}
}

type fixedLoad struct{ a Activity }

func (l fixedLoad) Activity() Activity { return l.a }

// The simulated GPU has no memory clock model: a request for memory
// clocks is refused before anything changes.
func TestGPUSettingsNoMemClocks(t *testing.T) {
	g := NewGPUSettings(DefaultConfig())
	devs, _ := g.Devices()
	err := gpusettings.Check(gpusettings.Request{Locks: map[string]gpusettings.Clocks{"mem_clocks": {MinMHz: 1000, MaxMHz: 1000}}}, devs)
	if err == nil || !strings.Contains(err.Error(), "its memory clocks cannot be locked: not supported") {
		t.Errorf("error %v", err)
	}
}
