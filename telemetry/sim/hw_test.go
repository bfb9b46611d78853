package sim

import (
	"math"
	"testing"
)

// Under the hardware model a ready engine's power is the energy of its
// steps over each interval between reads, plus ReadyExtraW while it had no
// step; what would exceed the limit is carried to the next interval. The
// target set at a read holds until the next (instant steps here), so the
// counter's increments are the targets. By hand, idle 70 W, ready extra
// 20 W, limit 700 W (630 W above idle), reads a second apart:
//
//	(1000, 1001]  first interval: 70 + 20                          =  90 J
//	(1001, 1002]  200 J of steps in 0.5 s: 70 + (200 + 20·0.5)/1  = 280 J
//	(1002, 1003]  no step: 70 + 20                                 =  90 J
//	(1003, 1004]  2,000 J of steps in 1 s: 630 above idle (capped),
//	              1,370 J carried                                   = 700 J
//	(1004, 1005]  carried, no step: room 630 - 20 = 610 J, + 20;
//	              760 J carried                                     = 700 J
//	(1005, 1006]  610 J, 150 J carried                              = 700 J
//	(1006, 1007]  70 + 150 + 20                                    = 240 J
//
// Above idle in all: 20+210+20+630+630+630+170 = 2,310 J = the steps'
// 2,200 J + 20 W over the 5.5 s without a step: nothing lost.
func TestHWPowerFollowsStepEnergy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Devices, cfg.IdleW, cfg.ReadyExtraW, cfg.MaxW = 1, 70, 20, 700
	cfg.RiseTauS, cfg.DecayTauS, cfg.NoiseW, cfg.DeviceSkew = 0, 0, 0, 0
	s, l, m := newTest(cfg)
	l.set(Activity{Phase: PhaseReady, HW: true})
	prev := read(t, s)[0].EnergyJ
	acts := map[float64]Activity{
		1001: {Phase: PhaseReady, HW: true, HWEnergyJ: 200, HWBusyS: 0.5},
		1003: {Phase: PhaseReady, HW: true, HWEnergyJ: 2200, HWBusyS: 1.5},
	}
	want := []float64{90, 280, 90, 700, 700, 700, 240}
	for i, w := range want {
		m.t = 1001 + float64(i)
		if a, ok := acts[m.t]; ok {
			l.set(a)
		}
		e := read(t, s)[0].EnergyJ
		if math.Abs(e-prev-w) > 1e-9 {
			t.Errorf("energy over (%v, %v]: %v J, want %v J", m.t-1, m.t, e-prev, w)
		}
		prev = e
	}
}

// The settings' sample under the hardware model is the clock the engine's
// last step ran at, and whether the cap held it.
func TestHWSettingsSampleFollowsTheEngine(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Devices = 1
	g := NewGPUSettings(cfg)
	cfg.Settings = g
	s, l, m := newTest(cfg)
	l.set(Activity{Phase: PhaseReady, HW: true, Running: 4, ClockMHz: 1234, PowerCapped: true})
	read(t, s)
	m.t++
	read(t, s)
	smp, err := g.Sample(0)
	if err != nil {
		t.Fatal(err)
	}
	if smp.SMClockMHz != 1234 || !smp.PowerCap {
		t.Errorf("sample = %+v, want the engine's 1234 MHz, capped", smp)
	}
	if err := g.SetPowerLimit(0, 250); err != nil {
		t.Fatal(err)
	}
	if lock, limit := g.HWLimits(); lock != 0 || limit != 250 {
		t.Errorf("HWLimits = %v, %v; want no lock, 250 W", lock, limit)
	}
}
