//go:build cgo

package nvml

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// manualClock is a run clock the test moves by hand.
type manualClock struct {
	mu sync.Mutex
	t  float64
}

func (c *manualClock) Now() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Set(t float64) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// The known profile of device 0 (device k is scaled by 1 + k/2):
//
//	power  P(t) = 100 W on [0,1], ramps 100 → 300 W on [1,2], 300 W after;
//	energy E(t) = ∫P plus a 500 W spike on [2.1, 2.3] that only the counter
//	              sees (no sample falls in it): +100 J.
//
//	E(t) = 100t                               t ≤ 1
//	     = 100 + 100(t-1) + 100(t-1)²          1 ≤ t ≤ 2
//	     = 300 + 300(t-2) + 500·clamp(t-2.1, 0, 0.2)   t ≥ 2
func profilePower(t float64) float64 {
	switch {
	case t <= 1:
		return 100
	case t <= 2:
		return 100 + 200*(t-1)
	}
	return 300
}

func profileEnergy(t float64) float64 {
	switch {
	case t <= 1:
		return 100 * t
	case t <= 2:
		u := t - 1
		return 100 + 100*u + 100*u*u
	}
	return 300 + 300*(t-2) + 500*math.Min(0.2, math.Max(0, t-2.1))
}

func scale(k int) float64 { return 1 + float64(k)/2 }

// devSpec says how the test wires one simulated device.
type devSpec struct {
	noCounter bool // energy counter NOT_SUPPORTED (pre-Volta)
	noField   bool // NVML_FI_DEV_POWER_INSTANT not supported: GetPowerUsage
	memUsed   uint64
	events    uint64 // clock-event reasons bit mask
	smMHz     uint32
	limitMW   uint32 // enforced power limit, 0: NOT_SUPPORTED
}

// wire sets the power, energy, clock and event funcs of every device of
// srv to the profile at clk, scaled per device.
func wire(srv *dgxa100.Server, clk *manualClock, spec func(k int) devSpec) {
	for k, nd := range srv.Devices {
		d := nd.(*dgxa100.Device)
		sp := spec(k)
		s := scale(k)
		d.MemoryInfo.Used = sp.memUsed
		d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) {
			if sp.limitMW == 0 {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return sp.limitMW, gonvml.SUCCESS
		}
		d.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
			if sp.noCounter {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return uint64(math.Round(profileEnergy(clk.Now()) * s * 1000)), gonvml.SUCCESS
		}
		d.GetFieldValuesFunc = func(fv []gonvml.FieldValue) gonvml.Return {
			for i := range fv {
				if fv[i].FieldId != gonvml.FI_DEV_POWER_INSTANT || sp.noField {
					fv[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
					continue
				}
				fv[i].NvmlReturn = uint32(gonvml.SUCCESS)
				fv[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				binary.NativeEndian.PutUint32(fv[i].Value[:], uint32(math.Round(profilePower(clk.Now())*s*1000)))
			}
			return gonvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) {
			return uint32(math.Round(profilePower(clk.Now()) * s * 1000)), gonvml.SUCCESS
		}
		d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
			if c != gonvml.CLOCK_SM {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return sp.smMHz, gonvml.SUCCESS
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
			return sp.events, gonvml.SUCCESS
		}
	}
}

func plain(int) devSpec { return devSpec{memUsed: 1 << 30, smMHz: 1980, limitMW: 700000} }

// The sampler over the 8 simulated H100s at t = 0, 0.5, …, 3 s, then the
// counter and trapezoid energies of the stage [0.25, 2.75] against values
// computed by hand. gpu1 has no instantaneous power field (GetPowerUsage),
// gpu2 no energy counter.
func TestSamplerCounterAndTrapezoidEnergy(t *testing.T) {
	srv := newDGXH100()
	clk := &manualClock{}
	wire(srv, clk, func(k int) devSpec {
		sp := plain(k)
		sp.noField = k == 1
		sp.noCounter = k == 2
		return sp
	})
	src, err := New(srv, Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	devs, err := src.Devices(context.Background())
	if err != nil || len(devs) != 8 {
		t.Fatalf("devices: %v, %v", devs, err)
	}
	for k, d := range devs {
		wantMethod, wantField := MethodCounter, PowerFieldInstant
		if k == 2 {
			wantMethod = MethodPower
		}
		if k == 1 {
			wantField = PowerFieldUsage
		}
		if d.ID != deviceID(k) || d.Method != wantMethod || d.PowerField != wantField || d.Name != "NVIDIA H100 80GB HBM3" || !strings.HasPrefix(d.UUID, "GPU-") {
			t.Errorf("device %d = %+v, want id gpu%d method %s field %s", k, d, k, wantMethod, wantField)
		}
		// GetEnforcedPowerLimit: 700000 mW → run.json power_limit_w 700.
		if d.PowerLimitW != 700 {
			t.Errorf("device %d power limit = %v W, want 700", k, d.PowerLimitW)
		}
	}
	inv := src.Inventory()
	if inv.Driver != "550.54.15" || inv.CUDA != "12.4" || inv.Devices[0].Architecture != "hopper" || inv.Devices[0].MemTotalBytes != 80*1024<<20 {
		t.Errorf("inventory = %+v", inv)
	}
	if !strings.Contains(inv.Devices[2].EnergyNote, "ERROR_NOT_SUPPORTED") {
		t.Errorf("gpu2 energy note = %q", inv.Devices[2].EnergyNote)
	}

	var rows []record.PowerSample
	// The sampler refuses a time ≤ 0 (no run clock reads it): it stamps
	// 1000 s later than the mock's clock, and the rows are shifted back
	// for the hand values below (1000 + k/2 is exact).
	smp := telemetry.NewSampler(src, time.Hour, func() float64 { return 1000 + clk.Now() }, func(s []record.PowerSample) error {
		rows = append(rows, s...)
		return nil
	}, nil)
	ctx := context.Background()
	for i := 0; i <= 6; i++ {
		clk.Set(float64(i) * 0.5)
		if err := smp.SampleNow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := smp.Stop(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7*8 {
		t.Fatalf("%d rows, want 56", len(rows))
	}
	for i := range rows {
		rows[i].T -= 1000
	}
	// Sample 3 (t = 1.5): P = 200 W·s_k; E = 175 J·s_k; memory 1 GiB.
	for k := range 8 {
		r := rows[3*8+k]
		if r.T != 1.5 || r.Device != deviceID(k) || r.PowerW != 200*scale(k) || r.MemUsedBytes != 1<<30 {
			t.Errorf("row t=1.5 gpu%d = %+v", k, r)
		}
		if k == 2 {
			if r.HasEnergy {
				t.Errorf("gpu2 has no counter but the row has energy %v", r.EnergyJ)
			}
		} else if !r.HasEnergy || math.Abs(r.EnergyJ-175*scale(k)) > 1e-9 {
			t.Errorf("gpu%d energy at t=1.5 = %v (has %v), want %v", k, r.EnergyJ, r.HasEnergy, 175*scale(k))
		}
	}

	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	const a, b = 0.25, 2.75
	// Counter, device 0: E(0.25) interpolated between 0 J (t=0) and 50 J
	// (t=0.5) = 25 J; E(2.75) between 550 J (t=2.5: 300+150+100) and 700 J
	// (t=3) = 625 J; difference 600 J (the spike's 100 J included).
	// Trapezoid, device 0: P(0.25) = 100, P(2.75) = 300;
	// 0.25·100 + 0.5·100 + 0.5·150 + 0.5·250 + 0.5·300 + 0.25·300
	// = 25 + 50 + 75 + 125 + 150 + 75 = 500 J (the spike is missed).
	for k := range 8 {
		got, err := pd.DeviceEnergy(deviceID(k), a, b, measure.MethodTrapz)
		if err != nil || math.Abs(got-500*scale(k)) > 1e-9 {
			t.Errorf("gpu%d trapz = %v, %v; want %v", k, got, err, 500*scale(k))
		}
		got, err = pd.DeviceEnergy(deviceID(k), a, b, measure.MethodCounter)
		if k == 2 {
			if err == nil {
				t.Errorf("gpu2 has no counter, counter energy = %v", got)
			}
			continue
		}
		if err != nil || math.Abs(got-600*scale(k)) > 1e-9 {
			t.Errorf("gpu%d counter = %v, %v; want %v", k, got, err, 600*scale(k))
		}
	}
	// Σ s_k = 8 + (0+1+…+7)/2 = 22: trapezoid total 500·22 = 11000 J; auto
	// falls back to the trapezoid since gpu2 has no counter.
	for _, m := range []string{measure.MethodTrapz, measure.MethodAuto} {
		if got, err := pd.Energy(a, b, m); err != nil || math.Abs(got-11000) > 1e-6 {
			t.Errorf("total %s = %v, %v; want 11000 J", m, got, err)
		}
	}
}

// H200, A100, B200 and Rubin servers: identity, architecture and memory
// come through. Blackwell (10) and Rubin (13) are the values the driver
// reports (nvml.h NVML_DEVICE_ARCH_*), whatever go-nvml version names them.
func TestOtherServers(t *testing.T) {
	for _, tc := range []struct {
		srv    *dgxa100.Server
		name   string
		arch   string
		memMiB int64
	}{
		{newDGXH200(), "NVIDIA H200 141GB HBM3e", "hopper", 144384},
		{dgxa100.New(), "Mock NVIDIA A100-SXM4-40GB", "ampere", 40960}, // 42949672960 B
		{newDGX(gpuModel{"NVIDIA B200 180GB HBM3e", 10, 184320}), "NVIDIA B200 180GB HBM3e", "blackwell", 184320},
		{newDGX(gpuModel{"simulated Rubin", 13, 294912}), "simulated Rubin", "rubin", 294912},
	} {
		clk := &manualClock{t: 1}
		wire(tc.srv, clk, plain)
		src, err := New(tc.srv, Options{GPUs: []string{"0"}})
		if err != nil {
			t.Fatal(err)
		}
		inv := src.Inventory()
		if len(inv.Devices) != 1 || inv.Devices[0].Name != tc.name || inv.Devices[0].Architecture != tc.arch || inv.Devices[0].Method != MethodCounter || inv.Devices[0].MemTotalBytes != tc.memMiB<<20 {
			t.Errorf("inventory = %+v, want %s %s %d MiB", inv, tc.name, tc.arch, tc.memMiB)
		}
		rs, err := src.Read(context.Background())
		if err != nil || len(rs) != 1 || rs[0].PowerW != 100 || rs[0].EnergyJ != 100 {
			t.Errorf("read = %+v, %v; want 100 W, 100 J", rs, err)
		}
		src.Close()
	}
}

// --gpus selects by index and UUID; a bad selection is a clear error and
// NVML is shut down.
func TestGPUSelection(t *testing.T) {
	srv := dgxa100.New()
	wire(srv, &manualClock{}, plain)
	uuid3 := srv.Devices[3].(*dgxa100.Device).UUID
	src, err := New(srv, Options{GPUs: []string{"1", uuid3}})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	if len(devs) != 2 || devs[0].ID != "gpu1" || devs[1].ID != "gpu3" || devs[1].UUID != uuid3 {
		t.Errorf("devices = %+v", devs)
	}
	src.Close()

	uuid1 := srv.Devices[1].(*dgxa100.Device).UUID
	for _, tc := range []struct {
		sel  []string
		want string
	}{
		{[]string{"8"}, "no GPU 8 (this machine has 8: 0..7)"},
		{[]string{"GPU-nope"}, "GPU GPU-nope"},
		{[]string{"1", uuid1}, "selected twice"},
	} {
		shut := len(srv.ShutdownCalls())
		_, err := New(srv, Options{GPUs: tc.sel})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GPUs %v: err = %v, want %q", tc.sel, err, tc.want)
		}
		if len(srv.ShutdownCalls()) != shut+1 {
			t.Errorf("GPUs %v: NVML not shut down after the error", tc.sel)
		}
	}
}

// A failed Init says why and what to use instead, and nothing else of NVML
// is called (every other func of the mock is nil and would panic).
func TestInitFailure(t *testing.T) {
	for _, tc := range []struct {
		ret  gonvml.Return
		want string
	}{
		{gonvml.ERROR_LIBRARY_NOT_FOUND, "libnvidia-ml.so.1) was not found"},
		{gonvml.ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"},
		{gonvml.ERROR_NO_PERMISSION, "no permission"},
		{gonvml.ERROR_UNKNOWN, "nvmlInit failed: ERROR_UNKNOWN"},
	} {
		lib := &mock.Interface{InitFunc: func() gonvml.Return { return tc.ret }}
		src, err := New(lib, Options{})
		if src != nil || err == nil {
			t.Fatalf("%v: no error", tc.ret)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "--telemetry none") || !strings.Contains(msg, "--telemetry dcgm") {
			t.Errorf("%v: %s", tc.want, msg)
		}
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, tc.ret) {
			t.Errorf("%v: error does not wrap ErrUnavailable and the return", tc.ret)
		}
		if n := len(lib.InitCalls()); n != 1 {
			t.Errorf("Init called %d times", n)
		}
	}
}

// The system library: on a machine without an NVIDIA driver Open fails
// with ErrUnavailable; with one it lists at least one device.
func TestOpenSystemLibrary(t *testing.T) {
	src, err := Open(Options{})
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Open: %v (does not wrap ErrUnavailable)", err)
		}
		t.Logf("no NVML here: %v", err)
		return
	}
	defer src.Close()
	if len(src.Inventory().Devices) == 0 {
		t.Error("Open succeeded with no device")
	}
}

// A counter that goes backwards is flagged, kept raw, and the analysis
// never gets a negative energy.
func TestCounterReset(t *testing.T) {
	srv := newDGXH200()
	wire(srv, &manualClock{}, plain)
	seq := []uint64{4000, 5000, 7000, 1000, 1500}
	n := -1 // the probe reads once
	srv.Devices[0].(*dgxa100.Device).GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		n++
		return seq[max(0, min(n, len(seq)-1))], gonvml.SUCCESS
	}
	clk := &manualClock{}
	var logs []string
	src, err := New(srv, Options{GPUs: []string{"0"}, Clock: clk.Now, Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var rows []record.PowerSample
	for i := range 4 {
		clk.Set(float64(i + 1))
		rs, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, telemetry.ToSamples(clk.Now(), rs)...)
	}
	// Raw counter: 5, 7, 1, 1.5 J.
	if rows[2].EnergyJ != 1 || rows[3].EnergyJ != 1.5 {
		t.Errorf("raw counter not kept: %+v", rows)
	}
	an := src.Anomalies()
	if len(an) != 1 || an[0].Kind != telemetry.AnomalyCounterReset || an[0].Device != "gpu0" || an[0].T != 3 || len(logs) != 1 {
		t.Fatalf("anomalies = %+v, logs %v", an, logs)
	}
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	// 5 → 7: 2 J; the reset segment [2, 3] falls back to the trapezoid
	// (measure: counter glitches) of the 100 W reported (wire's clock stays
	// at 0): 100 J; 1 → 1.5: 0.5 J. Total 102.5 J.
	if e, err := pd.Energy(1, 4, measure.MethodCounter); err != nil || e != 102.5 {
		t.Errorf("energy over the reset = %v, %v; want 102.5 J", e, err)
	}
}

// Clock-event reasons: throttling causes are reported once per window with
// the lowest SM clock; idle is not throttling.
func TestThrottled(t *testing.T) {
	srv := newDGXH100()
	wire(srv, &manualClock{}, func(k int) devSpec {
		sp := plain(k)
		switch k {
		case 0:
			sp.events = gonvml.ClocksThrottleReasonHwThermalSlowdown | gonvml.ClocksEventReasonGpuIdle
			sp.smMHz = 1005
		case 3:
			sp.events = gonvml.ClocksEventReasonSwPowerCap
		case 5:
			sp.events = gonvml.ClocksEventReasonGpuIdle
		}
		return sp
	})
	src, err := New(srv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if th, _ := src.Throttled(); th {
		t.Error("throttled before any read")
	}
	for range 2 {
		if _, err := src.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	th, why := src.Throttled()
	want := "gpu0: hw_thermal_slowdown (2 readings), clock down to 1005 MHz; gpu3: sw_power_cap (2 readings), clock down to 1980 MHz"
	if !th || why != want {
		t.Errorf("Throttled = %v %q\nwant %q", th, why, want)
	}
	if th, _ := src.Throttled(); th {
		t.Error("a new window should start empty")
	}
	// The bit values in telemetry.ClockEventCauses are NVML's. Board limit
	// and reliability are newer than go-nvml v0.12.9-0's header; the CUDA 13
	// nvml.h (go-nvml v0.13.4-1) defines nvmlClocksEventReasonBoardLimit
	// 0x200 and nvmlClocksEventReasonReliability 0x400, and its
	// nvmlClocksEventReasonAll is 0x7ff = 511 | 0x200 | 0x400 = 2047.
	const boardLimit, reliability = 0x200, 0x400
	for _, tc := range []struct {
		bit  uint64
		name string
	}{
		{gonvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
		{gonvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
		{gonvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
		{gonvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
		{gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
		{boardLimit, "board_limit"},
		{reliability, "reliability"},
	} {
		if got := telemetry.ClockEventCauses(tc.bit); len(got) != 1 || got[0] != tc.name {
			t.Errorf("bit %#x: %v, want %s", tc.bit, got, tc.name)
		}
	}
	if got := telemetry.ClockEventCauses(gonvml.ClocksEventReasonAll | boardLimit | reliability); len(got) != 7 {
		t.Errorf("ClockEventCauses(all) = %v", got)
	}
	idle := gonvml.ClocksEventReasonGpuIdle | gonvml.ClocksEventReasonApplicationsClocksSetting | gonvml.ClocksEventReasonSyncBoost | gonvml.ClocksEventReasonDisplayClockSetting
	if got := telemetry.ClockEventCauses(uint64(idle)); got != nil {
		t.Errorf("non-throttling reasons named: %v", got)
	}
}

// A driver older than the clock-event API: the legacy throttle reasons.
func TestLegacyThrottleReasons(t *testing.T) {
	srv := dgxa100.New()
	wire(srv, &manualClock{}, plain)
	d := srv.Devices[0].(*dgxa100.Device)
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_FUNCTION_NOT_FOUND }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, gonvml.Return) {
		return gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, gonvml.SUCCESS
	}
	src, err := New(srv, Options{GPUs: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if !src.Inventory().Devices[0].ClockEvents {
		t.Fatal("legacy throttle reasons not detected")
	}
	if _, err := src.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if th, why := src.Throttled(); !th || !strings.Contains(why, "hw_power_brake_slowdown") {
		t.Errorf("Throttled = %v %q", th, why)
	}
}

// A device with neither power field nor GetPowerUsage cannot be measured.
func TestNoPowerReading(t *testing.T) {
	srv := dgxa100.New()
	wire(srv, &manualClock{}, func(int) devSpec { return devSpec{noField: true} })
	srv.Devices[0].(*dgxa100.Device).GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	_, err := New(srv, Options{})
	if err == nil || !strings.Contains(err.Error(), "gpu0") || !strings.Contains(err.Error(), "no power reading") {
		t.Errorf("err = %v", err)
	}
}

// archName names the NVML_DEVICE_ARCH_* values of nvml.h (CUDA 12.9 and
// 13); values it does not know, and the 11 and 12 the two headers disagree
// on, are "unknown".
func TestArchName(t *testing.T) {
	for _, tc := range []struct {
		a    gonvml.DeviceArchitecture
		want string
	}{
		{2, "kepler"}, {3, "maxwell"}, {4, "pascal"}, {5, "volta"}, {6, "turing"},
		{7, "ampere"}, {8, "ada"}, {9, "hopper"}, {10, "blackwell"},
		{11, "unknown"}, {12, "unknown"}, {13, "rubin"}, {14, "unknown"},
		{gonvml.DEVICE_ARCH_UNKNOWN, "unknown"},
	} {
		if got := archName(tc.a); got != tc.want {
			t.Errorf("archName(%d) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestFieldFloat(t *testing.T) {
	put := func(vt gonvml.ValueType, f func(b []byte)) *gonvml.FieldValue {
		fv := &gonvml.FieldValue{ValueType: uint32(vt)}
		f(fv.Value[:])
		return fv
	}
	for _, tc := range []struct {
		fv   *gonvml.FieldValue
		want float64
	}{
		{put(gonvml.VALUE_TYPE_DOUBLE, func(b []byte) { binary.NativeEndian.PutUint64(b, math.Float64bits(123.5)) }), 123.5},
		{put(gonvml.VALUE_TYPE_UNSIGNED_INT, func(b []byte) { binary.NativeEndian.PutUint32(b, 700000) }), 700000},
		{put(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, func(b []byte) { binary.NativeEndian.PutUint64(b, 1<<40) }), 1 << 40},
		{put(gonvml.VALUE_TYPE_SIGNED_LONG_LONG, func(b []byte) { binary.NativeEndian.PutUint64(b, uint64(1<<63)) }), -(1 << 63)},
		{put(gonvml.VALUE_TYPE_SIGNED_INT, func(b []byte) { binary.NativeEndian.PutUint32(b, 0xffffffff) }), -1},
		{put(gonvml.VALUE_TYPE_UNSIGNED_SHORT, func(b []byte) { binary.NativeEndian.PutUint16(b, 650) }), 650},
	} {
		if got, ok := fieldFloat(tc.fv); !ok || got != tc.want {
			t.Errorf("type %d: %v %v, want %v", tc.fv.ValueType, got, ok, tc.want)
		}
	}
	if _, ok := fieldFloat(&gonvml.FieldValue{ValueType: uint32(gonvml.VALUE_TYPE_COUNT)}); ok {
		t.Error("unknown value type accepted")
	}
}

// An NVML error mid-run (a GPU lost after three samples) ends the run with
// status failed and the NVML reason in run.json, and the samples taken
// before stay in power.csv. The real monitor and baseline steps run.
func TestNVMLErrorMidRun(t *testing.T) {
	srv := newDGXH100()
	wire(srv, &manualClock{t: 1}, plain)
	var reads atomic.Int64
	d0 := srv.Devices[0].(*dgxa100.Device)
	energy0 := d0.GetTotalEnergyConsumptionFunc
	d0.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		reads.Add(1) // the probe is read 1; sample n is read n+1
		return energy0()
	}
	d5 := srv.Devices[5].(*dgxa100.Device)
	energy5 := d5.GetTotalEnergyConsumptionFunc
	d5.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		if reads.Load() > 4 {
			return 0, gonvml.ERROR_GPU_IS_LOST
		}
		return energy5()
	}
	src, err := New(srv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	dir := filepath.Join(t.TempDir(), "run")
	out, err := archive.Create(dir, record.Meta{RunID: "nvml-lost"})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	deps := &steps.Deps{Source: src}
	rc := &workflow.RunContext{Clock: workflow.NewClock(), Out: out, Log: zerolog.Nop()}
	ctx := context.Background()
	reg := steps.Registry()
	monitor, _ := reg.Lookup("monitor")
	baseline, _ := reg.Lookup("baseline")
	runErr := monitor.Run(ctx, rc, deps, &steps.MonitorConfig{Interval: workflow.Duration(10 * time.Millisecond)})
	if runErr == nil {
		runErr = baseline.Run(ctx, rc, deps, &steps.BaselineConfig{Duration: workflow.Duration(300 * time.Millisecond)})
	}
	if runErr == nil {
		t.Fatal("the run went on after the GPU was lost")
	}
	if !errors.Is(runErr, gonvml.ERROR_GPU_IS_LOST) {
		t.Errorf("run error %v does not wrap ERROR_GPU_IS_LOST", runErr)
	}
	_ = deps.StopSampling()
	if err := steps.Finish(ctx, rc, record.StatusFailed, runErr.Error()); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Status != record.StatusFailed || !strings.Contains(got.Meta.Reason, "gpu5") || !strings.Contains(got.Meta.Reason, "ERROR_GPU_IS_LOST") {
		t.Errorf("status %q reason %q", got.Meta.Status, got.Meta.Reason)
	}
	if len(got.Meta.Hardware.Devices) != 8 || got.Meta.Hardware.Devices[0].Method != MethodCounter {
		t.Errorf("hardware = %+v", got.Meta.Hardware)
	}
	// Reads 2, 3, 4 succeeded (8 rows each); read 5 failed at gpu5.
	if len(got.Power) != 24 {
		t.Errorf("%d power rows kept, want 24", len(got.Power))
	}
}
