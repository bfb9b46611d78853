package replay

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/telemetry"
)

const fixture = "testdata/run"

// collect runs the sampler over src: one SampleNow per clock value.
func collect(t *testing.T, src telemetry.Source, clock *float64, times ...float64) []record.PowerSample {
	t.Helper()
	var rows []record.PowerSample
	smp := telemetry.NewSampler(src, time.Hour, func() float64 { return *clock }, func(s []record.PowerSample) error {
		rows = append(rows, s...)
		return nil
	}, nil)
	for _, ts := range times {
		*clock = ts
		if err := smp.SampleNow(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// Energies of the fixture over the stage [100.25, 101.5], by hand:
//
//	gpu0 trapz: P(100.25) = 150 (100→200), P(101.5) = 300;
//	  (150+200)/2·0.25 + (200+300)/2·0.5 + 300·0.5 = 43.75 + 125 + 150 = 318.75 J
//	gpu0 counter: E(100.25) = 5037.5, E(101.5) = 5350 (5200→5500): 312.5 J
//	gpu1 trapz: 50·0.25 + (50+150)/2·0.5 + 150·0.5 = 12.5 + 50 + 75 = 137.5 J
func checkEnergies(t *testing.T, rows []record.PowerSample, shift float64) {
	t.Helper()
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	a, b := 100.25+shift, 101.5+shift
	for _, tc := range []struct {
		dev, method string
		want        float64
	}{
		{"gpu0", measure.MethodTrapz, 318.75},
		{"gpu0", measure.MethodCounter, 312.5},
		{"gpu1", measure.MethodTrapz, 137.5},
	} {
		got, err := pd.DeviceEnergy(tc.dev, a, b, tc.method)
		if err != nil || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s %s = %v, %v; want %v", tc.dev, tc.method, got, err, tc.want)
		}
	}
}

// Step mode: one instant per Read, original times; power.csv round-trips.
func TestStepReplay(t *testing.T) {
	var logs []string
	src, err := Open(fixture, Options{Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	if len(devs) != 2 || devs[0].UUID != "GPU-SIM-0" || devs[1].Method != "power" || !devs[0].Simulated {
		t.Errorf("devices from run.json = %+v", devs)
	}
	var clock float64
	rows := collect(t, src, &clock, 1, 2, 3, 4, 5)
	f, _ := os.Open(filepath.Join(fixture, archive.PowerFile))
	defer f.Close()
	orig, err := archive.ReadPowerCSV(f, "power.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(orig) {
		t.Fatalf("%d rows replayed, want %d", len(rows), len(orig))
	}
	for i := range orig {
		if rows[i] != orig[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], orig[i])
		}
	}
	if !src.Done() || len(logs) != 1 || !strings.Contains(logs[0], "the power recording ended") || !strings.Contains(logs[0], "no rows after t=102 (8 rows, 2.0 s of recording)") {
		t.Errorf("done %v, logs %v", src.Done(), logs)
	}
	checkEnergies(t, rows, 0)
	if first, last := src.Span(); first != 100 || last != 102 {
		t.Errorf("span = %v..%v", first, last)
	}
	_ = src.Close()
	if _, err := src.Read(context.Background()); !errors.Is(err, telemetry.ErrStopped) {
		t.Errorf("after close: %v", err)
	}
}

// Realtime mode: rows come out as the run clock passes their offset,
// re-stamped on the run clock, and each Read between two recorded rows
// adds each device's interpolated state now; energies are shift-invariant
// (the interpolated points lie on the segments the trapezoid integrates).
func TestRealtimeReplay(t *testing.T) {
	var clock float64
	src, err := Open(filepath.Join(fixture, archive.PowerFile), Options{Realtime: true, Clock: func() float64 { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	// 1000: the t=100 rows; 1000.2: the state at 100.2; 1000.7: the
	// t=100.5 rows and the state at 100.7; 1002: t=101 and t=102 (the
	// last rows: nothing after them to interpolate).
	rows := collect(t, src, &clock, 1000, 1000.2, 1000.7, 1002)
	const gib = 1 << 30
	// By hand, f = fraction of the recorded interval elapsed:
	//	100.2: f = 0.4 of 100→100.5: gpu0 100+0.4·100 = 140 W,
	//	  5000+0.4·75 = 5030 J, 1 GiB held; gpu1 50 W (50→50)
	//	100.7: f = 0.4 of 100.5→101: gpu0 200+0.4·100 = 240 W,
	//	  5075+0.4·125 = 5125 J, 1 GiB held; gpu1 50+0.4·100 = 90 W
	want := []record.PowerSample{
		{T: 1000, Device: "gpu0", PowerW: 100, EnergyJ: 5000, HasEnergy: true, MemUsedBytes: gib},
		{T: 1000, Device: "gpu1", PowerW: 50, MemUsedBytes: -1},
		{T: 1000.2, Device: "gpu0", PowerW: 140, EnergyJ: 5030, HasEnergy: true, MemUsedBytes: gib},
		{T: 1000.2, Device: "gpu1", PowerW: 50, MemUsedBytes: -1},
		{T: 1000.5, Device: "gpu0", PowerW: 200, EnergyJ: 5075, HasEnergy: true, MemUsedBytes: gib},
		{T: 1000.5, Device: "gpu1", PowerW: 50, MemUsedBytes: -1},
		{T: 1000.7, Device: "gpu0", PowerW: 240, EnergyJ: 5125, HasEnergy: true, MemUsedBytes: gib},
		{T: 1000.7, Device: "gpu1", PowerW: 90, MemUsedBytes: -1},
		{T: 1001, Device: "gpu0", PowerW: 300, EnergyJ: 5200, HasEnergy: true, MemUsedBytes: 2 * gib},
		{T: 1001, Device: "gpu1", PowerW: 150, MemUsedBytes: -1},
		{T: 1002, Device: "gpu0", PowerW: 300, EnergyJ: 5500, HasEnergy: true, MemUsedBytes: 2 * gib},
		{T: 1002, Device: "gpu1", PowerW: 150, MemUsedBytes: -1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
	for i := range want {
		r := rows[i]
		if r.T != want[i].T || r.Device != want[i].Device || math.Abs(r.PowerW-want[i].PowerW) > 1e-9 ||
			math.Abs(r.EnergyJ-want[i].EnergyJ) > 1e-9 || r.HasEnergy != want[i].HasEnergy || r.MemUsedBytes != want[i].MemUsedBytes {
			t.Errorf("row %d = %+v, want %+v", i, r, want[i])
		}
	}
	checkEnergies(t, rows, 900)
	// The run goes on past the recording: the end is reported at the last
	// row's re-stamped time, 102 + 900 = 1002 (run.json event
	// power_recording_ended:replay).
	if an := src.Anomalies(); len(an) != 0 {
		t.Errorf("anomalies before the end = %+v", an)
	}
	clock = 1003
	if rs, err := src.Read(context.Background()); err != nil || len(rs) != 0 {
		t.Fatalf("read after the end = %+v, %v", rs, err)
	}
	an := src.Anomalies()
	if len(an) != 1 || an[0].Kind != AnomalyRecordingEnded || an[0].Device != "replay" || an[0].T != 1002 ||
		!strings.Contains(an[0].Detail, "no rows after t=1002") {
		t.Errorf("anomalies = %+v, want the recording's end at 1002", an)
	}
}

// The bug a replayed run hit: the first Read (the preflight's look at GPU
// memory, not archived) starts the replay; the baseline's SampleNow comes
// between two recorded rows. Its sample must be at the boundary itself, so
// that the stage [1000.2, 1001.5] lies inside the archived samples.
func TestRealtimeReplayCoversStageBoundaries(t *testing.T) {
	clock := 1000.0
	src, err := Open(filepath.Join(fixture, archive.PowerFile), Options{Realtime: true, Clock: func() float64 { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background()); err != nil { // preflight, at 1000
		t.Fatal(err)
	}
	rows := collect(t, src, &clock, 1000.2, 1001.5)
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	// gpu0 by hand: P(100.2) = 140, P(100.5) = 200, P(101) = 300,
	// P(101.5) = 300 (300→300): (140+200)/2·0.3 + (200+300)/2·0.5 +
	// 300·0.5 = 51 + 125 + 150 = 326 J. Counter: E(101.5) = 5200+0.5·300
	// = 5350, E(100.2) = 5030: 320 J.
	for _, tc := range []struct {
		method string
		want   float64
	}{{measure.MethodTrapz, 326}, {measure.MethodCounter, 320}} {
		got, err := pd.DeviceEnergy("gpu0", 1000.2, 1001.5, tc.method)
		if err != nil || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("gpu0 %s = %v, %v; want %v", tc.method, got, err, tc.want)
		}
	}
}

// Without run.json the devices come from the rows.
func TestDerivedDevicesAndErrors(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixture, archive.PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, archive.PowerFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	if len(devs) != 2 || devs[0] != (record.Device{ID: "gpu0", Method: "counter", PowerField: "replay"}) || devs[1].Method != "power" {
		t.Errorf("derived devices = %+v", devs)
	}

	if _, err := Open(filepath.Join(dir, "nope.csv"), Options{}); err == nil {
		t.Error("missing file accepted")
	}
	bad := filepath.Join(dir, "bad")
	_ = os.Mkdir(bad, 0o755)
	_ = os.WriteFile(filepath.Join(bad, archive.PowerFile), []byte("t,device,power_w,energy_j,mem_used_bytes\n1,gpu0,abc,,\n"), 0o644)
	if _, err := Open(bad, Options{}); err == nil || !strings.Contains(err.Error(), "power.csv") {
		t.Errorf("bad csv: %v", err)
	}
	if _, err := New(nil, nil, Options{}); err == nil {
		t.Error("empty replay accepted")
	}
	if _, err := New([]record.PowerSample{{T: 1, Device: "gpu9"}}, []record.Device{{ID: "gpu0"}}, Options{}); err == nil || !strings.Contains(err.Error(), "gpu9") {
		t.Errorf("unknown device: %v", err)
	}
}

// A recorded counter that stepped back 500 J once (t=10 reads 500 instead
// of 1000) replayed in real time and sampled every 0.5 s: the sampler sees
// 900, 700 (interpolated), 500, 800 (interpolated), 1100. The analysis
// removes the whole excursion: 100 W × 20 s = 2000 J on [1000, 1020], not
// 2250 J (the 800 → 1100 step was kept before: the 265.8 W for a
// 100 W recording over a shorter stage).
func TestReplayedCounterStepBack(t *testing.T) {
	var rec []record.PowerSample
	for i := 0; i <= 20; i++ {
		e := 100 * float64(i)
		if i == 10 {
			e -= 500
		}
		rec = append(rec, record.PowerSample{T: float64(i + 1), Device: "g", PowerW: 100, EnergyJ: e, HasEnergy: true, MemUsedBytes: -1})
	}
	var clock float64
	src, err := New(rec, nil, Options{Realtime: true, Clock: func() float64 { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	var times []float64
	for c := 1000.0; c <= 1020; c += 0.5 {
		times = append(times, c)
	}
	rows := collect(t, src, &clock, times...)
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pd.Energy(1000, 1020, measure.MethodCounter)
	if err != nil || math.Abs(got-2000) > 1e-9 {
		t.Errorf("counter energy = %v, %v; want 2000 J (100 W × 20 s)", got, err)
	}
}

// --replay-offset: the replay starts 1 s into the recording (the fixture
// has rows at t = 100, 100.5, 101, 102): the t=101 row comes first,
// stamped with the run clock (1000), then t=102 at 1001; the rows before
// the offset are not replayed. At Close the source says how much of the
// recording was used: 1.0 s to 2.0 s of 2.0 s, 50 %.
func TestReplayOffsetAndUsage(t *testing.T) {
	var clock float64
	var logs []string
	src, err := Open(filepath.Join(fixture, archive.PowerFile), Options{Realtime: true, OffsetS: 1,
		Clock: func() float64 { return clock }, Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	rows := collect(t, src, &clock, 1000, 1001)
	if len(rows) != 4 || rows[0].T != 1000 || rows[0].PowerW != 300 || rows[0].EnergyJ != 5200 || rows[2].T != 1001 || rows[2].EnergyJ != 5500 {
		t.Fatalf("rows = %+v", rows)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "this run used 1.0 s of the 2.0 s recording (1.0 s to 2.0 s, 50 %)") {
		t.Errorf("logs = %q", logs)
	}
	for _, o := range []float64{-1, 2, 5, math.NaN()} {
		if _, err := Open(filepath.Join(fixture, archive.PowerFile), Options{OffsetS: o}); err == nil || !strings.Contains(err.Error(), "outside the recording (0 to 2 s)") {
			t.Errorf("offset %v: %v", o, err)
		}
	}
}

// A run shorter than the recording: the replay stops 0.7 s in and Close
// says so (35 % used, the rest not replayed), where it used to say nothing.
func TestReplayWarnsPartOfRecordingUsed(t *testing.T) {
	var clock float64
	var logs []string
	src, err := Open(filepath.Join(fixture, archive.PowerFile), Options{Realtime: true,
		Clock: func() float64 { return clock }, Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, src, &clock, 1000, 1000.7)
	_ = src.Close()
	if len(logs) != 1 || !strings.Contains(logs[0], "used 0.7 s of the 2.0 s recording (0.0 s to 0.7 s, 35 %); the rest was not replayed") {
		t.Errorf("logs = %q", logs)
	}
}
