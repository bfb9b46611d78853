package nvml

import (
	"slices"
	"testing"

	"github.com/joulebench/joulebench/telemetry"
)

// The devices command's view of NVML: versions in the detail, memory as
// the total in GiB, clock events known.
func TestListing(t *testing.T) {
	inv := Inventory{Driver: "550.54.15", CUDA: "12.4", NVML: "12.550.54.15", Devices: []DeviceInfo{
		{ID: "gpu0", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Architecture: "hopper", Method: MethodCounter,
			PowerField: PowerFieldInstant, Memory: true, MemTotalBytes: 85899345920, ClockEvents: true},
		{ID: "gpu1", Name: "Tesla P100", UUID: "GPU-b", Architecture: "pascal", Method: MethodPower, EnergyNote: "no energy counter",
			PowerField: PowerFieldUsage, MemTotalBytes: -1},
		{ID: "gpu2", Memory: true, MemTotalBytes: -1, Method: MethodCounter},
	}}
	l := listing(inv)
	yes, no := true, false
	// 85899345920 B / 2^30 = 80 GiB.
	want := []telemetry.DeviceInfo{
		{ID: "gpu0", Domain: "gpu", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Architecture: "hopper", Energy: "counter",
			PowerField: PowerFieldInstant, Memory: "80 GiB", ClockEvents: &yes},
		{ID: "gpu1", Domain: "gpu", Name: "Tesla P100", UUID: "GPU-b", Architecture: "pascal", Energy: "power", EnergyNote: "no energy counter",
			PowerField: PowerFieldUsage, Memory: "no", ClockEvents: &no},
		{ID: "gpu2", Domain: "gpu", Energy: "counter", Memory: "yes", ClockEvents: &no},
	}
	if l.Source != "nvml" || l.Detail != "driver 550.54.15, CUDA 12.4, NVML 12.550.54.15" || len(l.Devices) != len(want) {
		t.Fatalf("listing %+v", l)
	}
	for i, d := range l.Devices {
		w := want[i]
		if *d.ClockEvents != *w.ClockEvents {
			t.Errorf("%s: clock events %v", d.ID, *d.ClockEvents)
		}
		d.ClockEvents, w.ClockEvents = nil, nil
		if d != w {
			t.Errorf("device %d = %+v, want %+v", i, d, w)
		}
	}
	if l := listing(Inventory{}); l.Detail != "driver -" || !slices.Equal(l.Devices, nil) {
		t.Errorf("empty inventory: %+v", l)
	}
}
