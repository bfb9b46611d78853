//go:build cgo

package nvml

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/telemetry/nvml/nvmltest"
)

func newSettings(t *testing.T) (*nvmltest.Server, *Settings, gpusettings.Journals) {
	t.Helper()
	srv := nvmltest.New()
	ctl, err := NewSettings(srv)
	if err != nil {
		t.Fatal(err)
	}
	return srv, ctl, gpusettings.Journals{Dirs: []string{filepath.Join(t.TempDir(), "state", "joulebench")}}
}

func limits(srv *nvmltest.Server) []uint32 {
	srv.Lock()
	defer srv.Unlock()
	out := make([]uint32, len(srv.GPUs))
	for i, g := range srv.GPUs {
		out[i] = g.LimitMW
	}
	return out
}

func allEqual(xs []uint32, v uint32) bool {
	for _, x := range xs {
		if x != v {
			return false
		}
	}
	return true
}

// exists says whether a journal is in js.
func exists(js gpusettings.Journals) bool {
	found, err := js.Find()
	return err != nil || len(found) > 0
}

// journalOf is the journal of GPU i's UUID in js.
func journalOf(t *testing.T, srv *nvmltest.Server, js gpusettings.Journals, i int) string {
	t.Helper()
	u, _ := srv.Devices[i].GetUUID()
	return filepath.Join(js.Dirs[0], gpusettings.JournalPrefix+u+gpusettings.JournalSuffix)
}

// 250 W on all eight GPUs: the journal is on disk before the first change,
// every GPU reads 250 W back, run.json's record has asked, read back,
// previous, default and range; Restore puts 400 W back and removes the
// journal.
func TestSettingsApplyReadBackRestore(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	sets, journalAtFirst := 0, false
	srv.BeforeSet = func() {
		if sets == 0 {
			journalAtFirst = exists(journal)
		}
		sets++
	}
	s, err := gpusettings.Apply(ctl, gpusettings.Request{AllW: 250}, gpusettings.ApplyOptions{Journals: journal, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if !journalAtFirst {
		t.Error("the journal was not on disk at the first change")
	}
	if got := limits(srv); !allEqual(got, 250000) {
		t.Errorf("limits %v, want 250000 mW everywhere", got)
	}
	found, err := journal.Find()
	if err != nil || len(found) != 8 {
		t.Fatalf("journals %+v, %v", found, err)
	}
	j, err := gpusettings.ReadJournal(journalOf(t, srv, journal, 7))
	if err != nil || j == nil || j.RunID != "r1" || len(j.Devices) != 1 || j.Devices[0].PreviousPowerLimitW != 400 || j.Devices[0].Index != 7 {
		t.Fatalf("journal %+v, %v", j, err)
	}
	rec := s.Record()
	d := rec.Devices[3]
	if rec.Controller != "nvml" || rec.PowerLimitW != "250" || len(rec.Devices) != 8 ||
		d.PowerLimitAskedW != 250 || d.PowerLimitReadBackW != 250 || d.PowerLimitPreviousW != 400 ||
		d.PowerLimitDefaultW != 400 || d.PowerLimitMinW != 100 || d.PowerLimitMaxW != 400 {
		t.Errorf("record %+v", rec)
	}
	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := limits(srv); !allEqual(got, 400000) {
		t.Errorf("after restore: limits %v, want 400000 mW", got)
	}
	if exists(journal) {
		t.Error("journal left after restore")
	}
	if err := s.Restore(); err != nil || sets != 16 {
		t.Errorf("second restore: %v, %d sets (want 16: 8 set, 8 restored)", err, sets)
	}
}

// Out of range, clocks outside P0's, an unsupported GPU: refused before
// anything is changed or journalled.
func TestSettingsRefuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   gpusettings.Request
		setup func(*nvmltest.Server)
		want  string
	}{
		{"above max", gpusettings.Request{AllW: 450}, nil, "power limit 450 W is outside its allowed range 100-400 W (default 400 W)"},
		{"below min", gpusettings.Request{PerGPU: map[int]float64{2: 99}}, nil, "GPU 2 (Mock NVIDIA A100-SXM4-40GB): power limit 99 W is outside"},
		{"no such GPU", gpusettings.Request{PerGPU: map[int]float64{8: 200}}, nil, "no GPU 8 (GPUs present: 0, 1, 2, 3, 4, 5, 6, 7)"},
		{"clocks", gpusettings.Request{Locks: map[string]gpusettings.Clocks{"clocks": {MinMHz: 100, MaxMHz: 1200}}}, nil, "clocks 100,1200 MHz are outside its supported SM clocks 210-1410 MHz"},
		{"unsupported", gpusettings.Request{AllW: 200}, func(s *nvmltest.Server) { s.GPUs[5].LimitUnsupported = true }, "GPU 5 (Mock NVIDIA A100-SXM4-40GB): its power limit cannot be changed: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ctl, journal := newSettings(t)
			if tc.setup != nil {
				tc.setup(srv)
			}
			_, err := gpusettings.Apply(ctl, tc.req, gpusettings.ApplyOptions{Journals: journal})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing changed") {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for i, g := range srv.GPUs {
				if g.Sets != 0 {
					t.Errorf("GPU %d: %d sets", i, g.Sets)
				}
			}
			if exists(journal) {
				t.Error("journal written")
			}
		})
	}
}

// NO_PERMISSION on the first GPU: nothing changed, the error says how to
// grant the permission, the journal is gone.
func TestSettingsNoPermission(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	for _, g := range srv.GPUs {
		g.SetErr = gonvml.ERROR_NO_PERMISSION
	}
	_, err := gpusettings.Apply(ctl, gpusettings.Request{AllW: 250}, gpusettings.ApplyOptions{Journals: journal})
	if !errors.Is(err, gpusettings.ErrNoPermission) || !strings.Contains(err.Error(), "needs root") || !strings.Contains(err.Error(), "nvidia-smi -pl") {
		t.Fatalf("error %v", err)
	}
	if got := limits(srv); !allEqual(got, 400000) || exists(journal) {
		t.Errorf("limits %v, journal %v", got, exists(journal))
	}
}

// All or nothing: GPU 3 refuses after GPUs 0-2 took 250 W; they are put
// back to 400 W.
func TestSettingsAllOrNothing(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	srv.GPUs[3].SetErr = gonvml.ERROR_NO_PERMISSION
	_, err := gpusettings.Apply(ctl, gpusettings.Request{AllW: 250}, gpusettings.ApplyOptions{Journals: journal})
	if !errors.Is(err, gpusettings.ErrNoPermission) || !strings.Contains(err.Error(), "every GPU was restored") {
		t.Fatalf("error %v", err)
	}
	// GPUs 0-2: set then restored (2 calls each); 3: the refused call; 4-7: none.
	srv.Lock()
	defer srv.Unlock()
	for i, want := range []int{2, 2, 2, 1, 0, 0, 0, 0} {
		if g := srv.GPUs[i]; g.Sets != want || g.LimitMW != 400000 {
			t.Errorf("GPU %d: %d sets, limit %d mW; want %d sets, 400000", i, g.Sets, g.LimitMW, want)
		}
	}
	if exists(journal) {
		t.Error("journal left")
	}
}

// A limit that reads back other than asked fails before the run starts;
// every GPU is restored.
func TestSettingsReadBackDiffers(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	sets := 0
	srv.BeforeSet = func() {
		srv.Lock()
		defer srv.Unlock()
		switch sets++; sets {
		case 1: // the first change: from now GPU 1 reads 5 W high
			srv.GPUs[1].ReadBackOffsetMW = 5000
		case 9: // the restores begin: the offset goes
			srv.GPUs[1].ReadBackOffsetMW = 0
		}
	}
	_, err := gpusettings.Apply(ctl, gpusettings.Request{AllW: 250}, gpusettings.ApplyOptions{Journals: journal})
	if err == nil || !strings.Contains(err.Error(), "GPU 1: power limit read back 255 W, asked 250 W") {
		t.Fatalf("error %v", err)
	}
	if got := limits(srv); !allEqual(got, 400000) || exists(journal) {
		t.Errorf("limits %v, journal %v", got, exists(journal))
	}
}

// Locked clocks: set, not readable back (said so), unlocked by Restore.
func TestSettingsClocks(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	s, err := gpusettings.Apply(ctl, gpusettings.Request{Locks: map[string]gpusettings.Clocks{"clocks": {MinMHz: 900, MaxMHz: 1200}}}, gpusettings.ApplyOptions{Journals: journal})
	if err != nil {
		t.Fatal(err)
	}
	if srv.GPUs[6].Locked != [2]uint32{900, 1200} {
		t.Errorf("locked %v", srv.GPUs[6].Locked)
	}
	d := s.Record().Devices[6]
	if d.ClocksAskedMHz != "900,1200" || d.ClocksReadBackMHz != "" || !strings.Contains(d.ClocksNote, "cannot report locked clocks") || d.ClockMinMHz != 210 || d.ClockMaxMHz != 1410 {
		t.Errorf("record %+v", d)
	}
	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	if srv.GPUs[6].Locked != [2]uint32{} || exists(journal) {
		t.Errorf("after restore: locked %v, journal %v", srv.GPUs[6].Locked, exists(journal))
	}
}

// A sample reads the SM clock, the software power cap apart from the
// other reasons.
func TestSettingsSample(t *testing.T) {
	srv, ctl, _ := newSettings(t)
	srv.GPUs[2].ClockMHz, srv.GPUs[2].Reasons = 1005, 0x4|0x40
	got, err := ctl.Sample(2)
	if err != nil || got.SMClockMHz != 1005 || !got.PowerCap || len(got.Other) != 1 || got.Other[0] != "hw_thermal_slowdown" {
		t.Errorf("sample %+v, %v", got, err)
	}
	if got.ReasonsUnread {
		t.Error("reasons read, said unread")
	}
	// The driver cannot report the reasons: said so, not "no cap".
	srv.GPUs[2].ReasonsErr = gonvml.ERROR_NOT_SUPPORTED
	if got, err := ctl.Sample(2); err != nil || !got.ReasonsUnread || got.PowerCap || got.SMClockMHz != 1005 {
		t.Errorf("reasons unreadable: sample %+v, %v", got, err)
	}
}

// A run killed after changing GPUs 0 and 1 left their journals: every
// run refuses to start while they are there; restore puts GPU 0 back,
// reports GPU 1 (no longer present: another UUID at its index) and keeps
// its journal.
func TestRestoreJournal(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	uuid := func(i int) string { u, _ := srv.Devices[i].GetUUID(); return u }
	gone := filepath.Join(journal.Dirs[0], "gpu-settings-GPU-gone.json")
	for path, d := range map[string]gpusettings.JournalDevice{
		journalOf(t, srv, journal, 0): {Index: 0, UUID: uuid(0), PreviousPowerLimitW: 300, GPUSettingResets: record.GPUSettingResets{ResetClocks: true}},
		gone:                          {Index: 1, UUID: "GPU-gone", PreviousPowerLimitW: 300},
	} {
		j := &gpusettings.Journal{RunID: "killed-run", PID: 42, Created: "2026-12-01T00:00:00Z", Controller: "nvml", Devices: []gpusettings.JournalDevice{d}}
		if err := gpusettings.WriteJournal(path, j); err != nil {
			t.Fatal(err)
		}
	}
	srv.GPUs[0].LimitMW, srv.GPUs[0].Locked = 250000, [2]uint32{900, 1200}
	if err := journal.Check(); err == nil || !strings.Contains(err.Error(), "killed-run") || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "joulebench restore") {
		t.Errorf("preflight: %v", err)
	}
	if _, err := gpusettings.Apply(ctl, gpusettings.Request{AllW: 250}, gpusettings.ApplyOptions{Journals: journal}); err == nil || !strings.Contains(err.Error(), "never restored") {
		t.Errorf("apply with a journal outstanding: %v", err)
	}
	report, err := gpusettings.RestoreJournals(ctl, journal)
	if err == nil || !strings.Contains(err.Error(), "1 GPU(s) not restored") {
		t.Errorf("restore error %v", err)
	}
	for _, want := range []string{"GPU 0 (" + uuid(0) + "): restored: power limit 300 W, SM clocks unlocked", "GPU 1 (GPU-gone): not present: kept in the journal"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if srv.GPUs[0].LimitMW != 300000 || srv.GPUs[0].Locked != [2]uint32{} || srv.GPUs[1].Sets != 0 {
		t.Errorf("GPU 0: %d mW, locked %v; GPU 1 sets %d", srv.GPUs[0].LimitMW, srv.GPUs[0].Locked, srv.GPUs[1].Sets)
	}
	left, err := journal.Find()
	if err != nil || len(left) != 1 || left[0].Path != gone {
		t.Errorf("journal left %+v, %v", left, err)
	}
	// Once the GPU is back (its UUID again), restore clears the journal.
	j := left[0].Journal
	j.Devices[0].UUID = uuid(1)
	if err := gpusettings.WriteJournal(gone, j); err != nil {
		t.Fatal(err)
	}
	if report, err := gpusettings.RestoreJournals(ctl, journal); err != nil || !strings.Contains(report, "cleared") || exists(journal) || srv.GPUs[1].LimitMW != 300000 {
		t.Errorf("second restore: %q, %v", report, err)
	}
}

// Memory clocks where the GPU supports locking them: locked, journalled,
// recorded with their range, unlocked by Restore; outside P0's memory
// clocks refused before anything changes.
func TestSettingsMemClocks(t *testing.T) {
	srv, ctl, journal := newSettings(t)
	req := gpusettings.Request{Locks: map[string]gpusettings.Clocks{"mem_clocks": {MinMHz: 1215, MaxMHz: 1215}}}
	var journalled bool
	srv.BeforeSet = func() {
		if found, _ := journal.Find(); len(found) == 8 && found[0].Journal.Devices[0].ResetMemClocks {
			journalled = true
		}
	}
	s, err := gpusettings.Apply(ctl, req, gpusettings.ApplyOptions{Journals: journal})
	if err != nil {
		t.Fatal(err)
	}
	rec := s.Record()
	if !journalled || srv.GPUs[4].MemLocked != [2]uint32{1215, 1215} || rec.MemClocksMHz != "1215,1215" ||
		rec.Devices[4].MemClocksAskedMHz != "1215,1215" || rec.Devices[4].MemClockMinMHz != 1215 || rec.Devices[4].MemClockMaxMHz != 1215 {
		t.Errorf("journalled %v, locked %v, record %+v", journalled, srv.GPUs[4].MemLocked, rec)
	}
	if err := s.Restore(); err != nil || srv.GPUs[4].MemLocked != [2]uint32{} || exists(journal) {
		t.Errorf("restore: %v, locked %v", err, srv.GPUs[4].MemLocked)
	}
	_, err = gpusettings.Apply(ctl, gpusettings.Request{Locks: map[string]gpusettings.Clocks{"mem_clocks": {MinMHz: 1215, MaxMHz: 1593}}}, gpusettings.ApplyOptions{Journals: journal})
	if err == nil || !strings.Contains(err.Error(), "memory clocks 1215,1593 MHz are outside its supported memory clocks 1215-1215 MHz") || srv.GPUs[0].Sets != 2 {
		t.Errorf("out of range: %v (%d sets)", err, srv.GPUs[0].Sets)
	}
}
