package telemetry

import (
	"sync"
	"testing"
)

func TestThrottleLog(t *testing.T) {
	var l ThrottleLog
	if th, why := l.Report(); th || why != "" {
		t.Errorf("empty log: %v %q", th, why)
	}
	l.Observe("gpu1", nil, 900) // no cause: nothing recorded
	l.Observe("gpu2", []string{"sw_power_cap"}, 0)
	l.Observe("gpu0", []string{"hw_thermal_slowdown", "sw_power_cap"}, 1400)
	l.Observe("gpu0", []string{"hw_thermal_slowdown"}, 1200)
	l.Observe("gpu0", []string{"hw_thermal_slowdown"}, 1300)
	th, why := l.Report()
	want := "gpu2: sw_power_cap (1 reading); gpu0: hw_thermal_slowdown (3 readings), sw_power_cap (1 reading), clock down to 1200 MHz"
	if !th || why != want {
		t.Errorf("Report = %v %q\nwant %q", th, why, want)
	}
	if th, _ := l.Report(); th {
		t.Error("Report did not start a new window")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				l.Observe("gpu0", []string{"x"}, 1)
				l.Report()
			}
		})
	}
	wg.Wait()
}

func TestClockEventCauses(t *testing.T) {
	if got := ClockEventCauses(0x1 | 0x2 | 0x10 | 0x100); got != nil {
		t.Errorf("idle/app/sync/display named: %v", got)
	}
	got := ClockEventCauses(0x4 | 0x40 | 0x400)
	if len(got) != 3 || got[0] != "sw_power_cap" || got[1] != "hw_thermal_slowdown" || got[2] != "reliability" {
		t.Errorf("causes = %v", got)
	}
}
