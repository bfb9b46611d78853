package telemetry_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
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
	m := telemetry.NewMulti(telemetry.NewNone(), a)
	if m.Name() != "none+rapl" {
		t.Errorf("name %q", m.Name())
	}
	devs, err := m.Devices(context.Background())
	if err != nil || len(devs) != 2 || devs[0].Domain != archive.DomainCPU || devs[1].Domain != archive.DomainDRAM {
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
	_, err = telemetry.NewMulti(a, b).Devices(context.Background())
	if err == nil || !strings.Contains(err.Error(), "device cpu0 is named by both rapl and rapl") {
		t.Fatalf("error %v, want the duplicate named", err)
	}
}
