//go:build cgo

package nvml

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/telemetry/nvml/nvmltest"
)

// Every setting of record.GPUSettingsTable through go-nvml's mock (a DGX
// A100: 400 W, range 100-400 W; SM clocks 210-1410 MHz; memory clocks
// 1215 MHz): applied to every GPU, read back where NVML can, recorded in
// run.json's fields of the setting, journalled, and undone by Restore.
func TestSettingsTableApplyRestore(t *testing.T) {
	// state is the mock GPU's value of the setting, as the value given
	// reads: the limit in W, a locked range MIN,MAX ("0,0" unlocked).
	state := map[string]func(g *nvmltest.GPU) [2]uint32{
		"power_limit": func(g *nvmltest.GPU) [2]uint32 { return [2]uint32{g.LimitMW / 1000} },
		"clocks":      func(g *nvmltest.GPU) [2]uint32 { return g.Locked },
		"mem_clocks":  func(g *nvmltest.GPU) [2]uint32 { return g.MemLocked },
	}
	cases := map[string]struct {
		value          string
		applied, after [2]uint32
		// readBack is run.json's read-back of GPU 2 ("" none); note its
		// note's presence.
		readBack string
		note     bool
	}{
		"power_limit": {"250", [2]uint32{250}, [2]uint32{400}, "", false},
		"clocks":      {"900,1200", [2]uint32{900, 1200}, [2]uint32{}, "", true},
		"mem_clocks":  {"1215,1215", [2]uint32{1215, 1215}, [2]uint32{}, "", false},
	}
	for _, s := range record.GPUSettingsTable() {
		t.Run(s.Key, func(t *testing.T) {
			tc, ok := cases[s.Key]
			if !ok {
				t.Fatalf("no case for %s: add one (and its mock state)", s.Key)
			}
			srv, ctl, journal := newSettings(t)
			var v record.GPUSettingValues
			*s.Value(&v) = tc.value
			req, err := gpusettings.ParseRequest(v)
			if err != nil {
				t.Fatal(err)
			}
			var journalled bool
			srv.BeforeSet = func() { journalled = journalled || exists(journal) }
			sess, err := gpusettings.Apply(ctl, req, gpusettings.ApplyOptions{Journals: journal, RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range srv.GPUs {
				srv.Lock()
				got := state[s.Key](g)
				srv.Unlock()
				if got != tc.applied {
					t.Errorf("GPU %d: %v applied, want %v", i, got, tc.applied)
				}
			}
			rec := sess.Record()
			if *s.Asked(&rec) != tc.value || !journalled {
				t.Errorf("record asks %q, journalled %v", *s.Asked(&rec), journalled)
			}
			d := rec.Devices[2]
			if s.Kind == record.GPULimit && (d.PowerLimitAskedW != 250 || d.PowerLimitReadBackW != 250) {
				t.Errorf("limit asked %v, read back %v", d.PowerLimitAskedW, d.PowerLimitReadBackW)
			}
			if s.Device != nil {
				f := s.Device(&d)
				if *f.Asked != tc.value || *f.Min == 0 || *f.Max < *f.Min {
					t.Errorf("device record %+v", d)
				}
				if f.ReadBack != nil && (*f.ReadBack != tc.readBack || (*f.Note != "") != tc.note) {
					t.Errorf("read back %q, note %q", *f.ReadBack, *f.Note)
				}
			}
			if err := sess.Restore(); err != nil {
				t.Fatal(err)
			}
			for i, g := range srv.GPUs {
				srv.Lock()
				got := state[s.Key](g)
				srv.Unlock()
				if got != tc.after {
					t.Errorf("GPU %d: %v after restore, want %v", i, got, tc.after)
				}
			}
			if exists(journal) {
				t.Error("journal left after restore")
			}
		})
	}
}

// A run on the simulator opens no NVML controller: the simulator's own
// takes its settings.
func TestOpenForRunSimulated(t *testing.T) {
	if ctl, err := OpenForRun(true); ctl != nil || err != nil {
		t.Errorf("simulated: %v, %v", ctl, err)
	}
}
