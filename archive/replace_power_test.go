package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// RePlacePower rewrites the times of the rows written so far (those of
// node1:gpu0 moved 0.25 s earlier, gpu1's kept), every other cell read
// back unchanged; a row appended afterwards follows them. A new time that
// would put a device's sample before its previous one is refused and
// power.csv stays as it was.
func TestRePlacePower(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	rows := []record.PowerSample{
		{T: 100, Device: "node1:gpu0", PowerW: 300.5, EnergyJ: 12.25, HasEnergy: true, MemUsedBytes: 1024},
		{T: 100, Device: "gpu1", PowerW: 80, MemUsedBytes: -1},
		{T: 101, Device: "node1:gpu0", PowerW: 301, MemUsedBytes: -1},
		{T: 101, Device: "gpu1", PowerW: 81, MemUsedBytes: -1},
	}
	if err := w.AppendPower(rows...); err != nil {
		t.Fatal(err)
	}
	earlier := func(device string, t float64) (float64, bool) {
		if device != "node1:gpu0" {
			return t, false
		}
		return t - 0.25, true
	}
	if err := w.RePlacePower(earlier); err != nil {
		t.Fatal(err)
	}
	// A move that puts the second sample of gpu1 (101) before its first
	// (100): refused, nothing changes.
	back := func(device string, t float64) (float64, bool) {
		if device == "gpu1" && t == 101 {
			return 99, true
		}
		return t, false
	}
	if err := w.RePlacePower(back); err == nil || !strings.Contains(err.Error(), "before its previous sample") {
		t.Errorf("a move back in time: %v", err)
	}
	if err := w.AppendPower(record.PowerSample{T: 102, Device: "gpu1", PowerW: 82, MemUsedBytes: -1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "t,device,power_w,energy_j,mem_used_bytes\n" +
		"99.75,node1:gpu0,300.5,12.25,1024\n" +
		"100,gpu1,80,,\n" +
		"100.75,node1:gpu0,301,,\n" +
		"101,gpu1,81,,\n" +
		"102,gpu1,82,,\n"
	if string(b) != want {
		t.Errorf("power.csv:\n%s\nwant:\n%s", b, want)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}
