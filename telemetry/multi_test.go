package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/rapl"
)

// raplTree writes a one-package powercap tree whose counter stands at uj.
func raplTree(t *testing.T, uj string) string {
	t.Helper()
	root := t.TempDir()
	for dir, name := range map[string]string{"intel-rapl:0": "package-0", "intel-rapl:0:0": "dram"} {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range map[string]string{"name": name, "max_energy_range_uj": "1000000000", "energy_uj": uj} {
			if err := os.WriteFile(filepath.Join(d, f), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestMultiSideBySide(t *testing.T) {
	clock := func() float64 { return 50 }
	a, err := rapl.Open(rapl.Options{Root: raplTree(t, "0"), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	m := telemetry.NewMulti(clock, telemetry.NewNone(), a)
	if m.Name() != "none+rapl" {
		t.Errorf("name %q", m.Name())
	}
	devs, err := m.Devices(context.Background())
	if err != nil || len(devs) != 2 || devs[0].Domain != record.DomainCPU || devs[1].Domain != record.DomainDRAM {
		t.Fatalf("devices %+v, %v", devs, err)
	}
	rs, err := m.Read(context.Background())
	if err != nil || len(rs) != 2 || rs[0].Device != "cpu0" || rs[1].Device != "dram0" {
		t.Fatalf("readings %+v, %v", rs, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A closed source's error names it.
	if _, err := m.Read(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "rapl: ") {
		t.Fatalf("read after close: %v, want an error naming rapl", err)
	}
}

func TestMultiDuplicateDevice(t *testing.T) {
	a, err := rapl.Open(rapl.Options{Root: raplTree(t, "0")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rapl.Open(rapl.Options{Root: raplTree(t, "0")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = telemetry.NewMulti(nil, a, b).Devices(context.Background())
	if err == nil || !strings.Contains(err.Error(), "device cpu0 is named by both rapl and rapl") {
		t.Fatalf("error %v, want the duplicate named", err)
	}
}

// gated is a source whose reads wait for a value on its gate: a BMC that
// answers when the test says so.
type gated struct{ gate chan float64 }

func (g *gated) Name() string { return "bmc" }
func (g *gated) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "node0", Domain: record.DomainNode}}, nil
}
func (g *gated) Read(ctx context.Context) ([]telemetry.Reading, error) {
	select {
	case w := <-g.gate:
		return []telemetry.Reading{{Device: "node0", PowerW: w, MemUsedBytes: -1}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (g *gated) Close() error { return nil }

// A slow source neither holds up the others nor takes their time: each
// Read returns the fast source's reading within Wait, and the slow one's
// reading comes with a later Read, stamped when it was taken.
func TestMultiSlowSource(t *testing.T) {
	var mu sync.Mutex
	now := 10.0
	clock := func() float64 { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(v float64) { mu.Lock(); now = v; mu.Unlock() }
	// (The reads stay at t=11 until the BMC's reading arrives.)
	fast, err := rapl.Open(rapl.Options{Root: raplTree(t, "0"), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	slow := &gated{gate: make(chan float64)}
	m := telemetry.NewMulti(clock, fast, slow)
	m.Wait = 20 * time.Millisecond
	defer m.Close()
	devices := func(rs []telemetry.Reading) string {
		var ids []string
		for _, r := range rs {
			ids = append(ids, fmt.Sprintf("%s@%g", r.Device, r.T))
		}
		return strings.Join(ids, " ")
	}
	// t=10: the BMC does not answer; RAPL's two zones do.
	rs, err := m.Read(context.Background())
	if err != nil || devices(rs) != "cpu0@10 dram0@10" {
		t.Fatalf("first read %q, %v", devices(rs), err)
	}
	// t=11: the BMC answers 640 W to its first read, which is stamped
	// then, and reaches a later Read.
	setNow(11)
	slow.gate <- 640
	deadline := time.Now().Add(5 * time.Second)
	var all []telemetry.Reading
	for time.Now().Before(deadline) {
		rs, err = m.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rs...)
		if strings.Contains(devices(all), "node0") {
			break
		}
	}
	got := devices(all)
	if !strings.Contains(got, "node0@11") || !strings.Contains(got, "cpu0@11") {
		t.Fatalf("later reads %q, want node0@11 among cpu0@11 …", got)
	}
	for _, r := range all {
		if r.Device == "node0" && r.PowerW != 640 {
			t.Errorf("node0 %g W, want 640", r.PowerW)
		}
	}
}
