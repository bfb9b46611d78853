package rapl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// fakeZone writes one powercap zone directory under root.
func fakeZone(t *testing.T, root, dir, name string, energyUJ, rangeUJ uint64) {
	t.Helper()
	d := filepath.Join(root, dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"name": name + "\n", "max_energy_range_uj": strconv.FormatUint(rangeUJ, 10) + "\n"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setEnergy(t, root, dir, energyUJ)
}

func setEnergy(t *testing.T, root, dir string, uj uint64) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, dir, "energy_uj"), []byte(strconv.FormatUint(uj, 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stepClock returns 100, 101, 102, ... one second per call.
func stepClock() func() float64 {
	t := 99.0
	return func() float64 { t++; return t }
}

// A two-socket machine: package and dram zones read, core and psys not.
func TestDevicesAndDomains(t *testing.T) {
	root := t.TempDir()
	fakeZone(t, root, "intel-rapl:0", "package-0", 1000, 262143328850)
	fakeZone(t, root, "intel-rapl:0:0", "core", 10, 262143328850)
	fakeZone(t, root, "intel-rapl:0:1", "dram", 20, 65712999613)
	fakeZone(t, root, "intel-rapl:1", "package-1", 30, 262143328850)
	fakeZone(t, root, "intel-rapl:2", "psys", 40, 262143328850)
	src, err := Open(Options{Root: root, Clock: stepClock()})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	want := []struct{ id, domain string }{{"cpu0", record.DomainCPU}, {"dram0", record.DomainDRAM}, {"cpu1", record.DomainCPU}}
	if len(devs) != len(want) {
		t.Fatalf("devices %+v, want %v", devs, want)
	}
	for i, w := range want {
		if devs[i].ID != w.id || devs[i].Domain != w.domain || devs[i].Method != "counter" {
			t.Errorf("device %d = %+v, want %s %s counter", i, devs[i], w.id, w.domain)
		}
	}
}

// Energy and power from the counters, across a wrap at max_energy_range_uj.
func TestReadWraparound(t *testing.T) {
	const rng = 1_000_000_000 // 1000 J
	tests := []struct {
		name        string
		start, next uint64
		// Hand values: the energy between the two reads, one second
		// apart, in J (= W).
		wantJ float64
	}{
		// 990 J → 1000 J range → 40 J: (1000 - 990) + 40 = 50 J.
		{"wrap", 990_000_000, 40_000_000, 50},
		// 100 J → 175.5 J: 75.5 J.
		{"no wrap", 100_000_000, 175_500_000, 75.5},
		// unchanged: 0 J.
		{"idle", 5, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fakeZone(t, root, "intel-rapl:0", "package-0", tc.start, rng)
			src, err := Open(Options{Root: root, Clock: stepClock()}) // opens at t=100
			if err != nil {
				t.Fatal(err)
			}
			setEnergy(t, root, "intel-rapl:0", tc.next)
			rs, err := src.Read(context.Background()) // t=101
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || math.Abs(rs[0].EnergyJ-tc.wantJ) > 1e-9 || math.Abs(rs[0].PowerW-tc.wantJ) > 1e-9 || rs[0].T != 101 || !rs[0].HasEnergy {
				t.Fatalf("reading %+v, want energy %g J, power %g W at t=101", rs, tc.wantJ, tc.wantJ)
			}
			// A second wrap-free second of 1 J: the counter accumulates.
			setEnergy(t, root, "intel-rapl:0", (tc.next+1_000_000)%rng)
			rs, _ = src.Read(context.Background())
			if math.Abs(rs[0].EnergyJ-(tc.wantJ+1)) > 1e-9 || math.Abs(rs[0].PowerW-1) > 1e-9 {
				t.Fatalf("second reading %+v, want counter %g J, 1 W", rs[0], tc.wantJ+1)
			}
		})
	}
}

// energy_uj root-only: the error says so and what to do.
func TestEnergyNotReadable(t *testing.T) {
	root := t.TempDir()
	fakeZone(t, root, "intel-rapl:0", "package-0", 1, 1000)
	path := filepath.Join(root, "intel-rapl:0", "energy_uj")
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Root: root})
	if os.Geteuid() == 0 {
		// Root reads a mode-000 file: check the message on the error the
		// kernel gives a user.
		err = explain(path, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES})
	}
	if err == nil {
		t.Fatal("Open succeeded on an unreadable energy_uj")
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("error %v does not wrap fs.ErrPermission", err)
	}
	for _, want := range []string{"energy_uj is not readable", "root", "chmod o+r", "--telemetry rapl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestNoZones(t *testing.T) {
	_, err := Open(Options{Root: t.TempDir()})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
}

// A zone that appears after Open is logged once and not read.
func TestZoneAppearing(t *testing.T) {
	root := t.TempDir()
	fakeZone(t, root, "intel-rapl:0", "package-0", 0, 262143328850)
	var logs []string
	src, err := Open(Options{Root: root, Clock: stepClock(), Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	fakeZone(t, root, "intel-rapl:1", "package-1", 0, 262143328850)
	for range 3 {
		rs, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || rs[0].Device != "cpu0" {
			t.Fatalf("readings %+v, want cpu0 only", rs)
		}
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "intel-rapl:1 (package-1) appeared") {
		t.Fatalf("logs %q, want one line about intel-rapl:1", logs)
	}
}

// A counter whose range wraps faster than the reads come: 100 J at up to
// 1 kW (MaxZoneW) is 0.1 s, and the reads are 1 s apart, so a counter that
// reads 40 J more may have gained 40, 140, 240 ... J. Each such reading is
// refused, logged once; after RefusedRun with none accepted, Read fails
// saying how often to sample. Before, each interval was read as one wrap
// at most: at 1 kW, 1000 J read as 0 to 100 J, ten times too low, with
// exit 0. The first read after Open only starts the counting.
func TestWrapsTooFastToCount(t *testing.T) {
	const rng = 100_000_000 // 100 J
	root := t.TempDir()
	fakeZone(t, root, "intel-rapl:0", "package-0", 0, rng)
	var logs []string
	src, err := Open(Options{Root: root, Clock: stepClock(), Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	var uj uint64
	var readErr error
	reads := 0
	for range 10 {
		uj = (uj + 40_000_000) % rng
		setEnergy(t, root, "intel-rapl:0", uj)
		rs, err := src.Read(context.Background())
		if err != nil {
			readErr = err
			break
		}
		reads++
		if len(rs) != 0 {
			t.Fatalf("read %d: readings %+v, want none (refused)", reads, rs)
		}
	}
	// The first read starts the counting; the next RefusedRun are
	// refused, the last of them with the error.
	if reads != telemetry.RefusedRun || readErr == nil {
		t.Fatalf("%d reads, then %v; want %d, then an error", reads, readErr, telemetry.RefusedRun)
	}
	for _, want := range []string{"rapl: cpu0: its counter wraps at max_energy_range_uj 100000000 µJ, which takes 0.1 s at up to 1000 W, less than the 1 s between reads",
		"sample more often than every 0.1 s"} {
		if !strings.Contains(readErr.Error(), want) {
			t.Errorf("error %q does not say %q", readErr, want)
		}
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "rapl: cpu0: 1 s since the previous read, longer than the 0.1 s its counter") || !strings.Contains(logs[0], "refused (a gap in the samples)") {
		t.Errorf("logs %q, want one line saying the reading is refused", logs)
	}
}

// A zone read once in time keeps its readings when a later interval is
// too long (a stall): that one reading is refused, not the run.
func TestOneLongIntervalIsAGap(t *testing.T) {
	const rng = 5_000_000_000 // 5000 J: 5 s at 1 kW
	root := t.TempDir()
	fakeZone(t, root, "intel-rapl:0", "package-0", 0, rng)
	at := []float64{100, 101, 102, 110, 111} // Open, then reads; 102 → 110 is 8 s > 5 s
	i := 0
	clock := func() float64 { v := at[i]; i++; return v }
	src, err := Open(Options{Root: root, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// 100 J per read (100 W over 1 s; the 8 s gap's count is unknown).
	var got []int
	for k := 1; k <= 4; k++ {
		setEnergy(t, root, "intel-rapl:0", uint64(k)*100_000_000)
		rs, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, len(rs))
	}
	if fmt.Sprint(got) != "[1 1 0 1]" {
		t.Errorf("readings per read %v, want [1 1 0 1] (the 8 s interval refused)", got)
	}
}
