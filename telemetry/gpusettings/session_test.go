package gpusettings

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

func tempJournals(t *testing.T) Journals {
	t.Helper()
	return Journals{Dirs: []string{filepath.Join(t.TempDir(), "state")}}
}

// journalFiles lists the journal files in js's directories.
func journalFiles(t *testing.T, js Journals) []string {
	t.Helper()
	var out []string
	for _, d := range js.Dirs {
		names, err := journalNames(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, names...)
	}
	return out
}

func clocks(lo, hi uint32) *Clocks { return &Clocks{MinMHz: lo, MaxMHz: hi} }

// locks are the SM and memory clocks locked (nil: not asked).
func locks(sm, mem *Clocks) map[string]Clocks {
	m := map[string]Clocks{}
	if sm != nil {
		m["clocks"] = *sm
	}
	if mem != nil {
		m["mem_clocks"] = *mem
	}
	return m
}

// 250 W and locked SM and memory clocks on two GPUs at 400 W: one journal
// file per GPU, on disk before the first change, with the previous limit
// and the clocks to unlock; every value read back and recorded; Restore
// puts 400 W back, unlocks, removes the journals and records "restored".
func TestApplyReadBackRestore(t *testing.T) {
	f := newFake(2)
	f.clocksReadable = true
	js := tempJournals(t)
	var atFirst []string
	f.fail = func(op string, _ int) error {
		if op == "set-power" && atFirst == nil {
			atFirst = journalFiles(t, js)
		}
		return nil
	}
	req := Request{AllW: 250, Locks: locks(clocks(900, 1200), clocks(1215, 1215))}
	s, err := Apply(f, req, ApplyOptions{Journals: js, RunID: "r1", Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(atFirst, " ") != "gpu-settings-GPU-0.json gpu-settings-GPU-1.json" {
		t.Errorf("journal files at the first change: %q", atFirst)
	}
	j, err := ReadJournal(filepath.Join(js.Dirs[0], "gpu-settings-GPU-1.json"))
	want := JournalDevice{Index: 1, UUID: "GPU-1", PreviousPowerLimitW: 400, GPUSettingResets: record.GPUSettingResets{ResetClocks: true, ResetMemClocks: true}}
	if err != nil || j.RunID != "r1" || j.PID != os.Getpid() || j.Created != "2026-12-01T00:00:00Z" || len(j.Devices) != 1 || j.Devices[0] != want {
		t.Errorf("journal %+v, %v", j, err)
	}
	for i := range 2 {
		if w, c, m := f.state(i); w != 250 || c != (Clocks{900, 1200}) || m != (Clocks{1215, 1215}) {
			t.Errorf("GPU %d: %v W, clocks %v, mem %v", i, w, c, m)
		}
	}
	rec := s.Record()
	d := rec.Devices[1]
	if rec.PowerLimitW != "250" || rec.ClocksMHz != "900,1200" || rec.MemClocksMHz != "1215,1215" || rec.Controller != "nvml" ||
		d.PowerLimitAskedW != 250 || d.PowerLimitReadBackW != 250 || d.PowerLimitPreviousW != 400 || d.ClocksReadBackMHz != "900,1200" ||
		d.MemClockMinMHz != 1215 || rec.Restore != "" {
		t.Errorf("record %+v", rec)
	}
	if s.JournalDir() != js.Dirs[0] {
		t.Errorf("journal dir %q", s.JournalDir())
	}
	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if w, c, m := f.state(i); w != 400 || c != (Clocks{}) || m != (Clocks{}) {
			t.Errorf("GPU %d after restore: %v W, clocks %v, mem %v", i, w, c, m)
		}
	}
	if left := journalFiles(t, js); len(left) != 0 {
		t.Errorf("journals left %q", left)
	}
	if r := s.Record(); r.Restore != record.RestoreDone || r.RestoreError != "" {
		t.Errorf("restore recorded %q %q", r.Restore, r.RestoreError)
	}
	if got := s.Restored(); got != "power limit 400 W on GPU 0, 1; SM clocks unlocked on GPU 0, 1; memory clocks unlocked on GPU 0, 1" {
		t.Errorf("restored %q", got)
	}
	n := len(f.calls)
	if err := s.Restore(); err != nil || len(f.calls) != n {
		t.Errorf("second restore: %v, %d calls", err, len(f.calls)-n)
	}
}

// Two runs started together: both passed the check, the first created
// the GPUs' journals; the second finds GPU 1's and is refused, leaving
// none of its own (created exclusively, never replaced by a rename).
func TestJournalCreatedExclusively(t *testing.T) {
	js := tempJournals(t)
	a := &Journal{RunID: "a", PID: 1, Controller: "nvml", Devices: []JournalDevice{{Index: 0, UUID: "GPU-0", PreviousPowerLimitW: 400}, {Index: 1, UUID: "GPU-1", PreviousPowerLimitW: 400}}}
	b := &Journal{RunID: "b", PID: 2, Controller: "nvml", Devices: []JournalDevice{{Index: 2, UUID: "GPU-2", PreviousPowerLimitW: 400}, {Index: 1, UUID: "GPU-1", PreviousPowerLimitW: 250}}}
	if _, _, err := js.create(a); err != nil {
		t.Fatal(err)
	}
	_, _, err := js.create(b)
	if err == nil || !strings.Contains(err.Error(), "GPU 1 (GPU-1)") || !strings.Contains(err.Error(), "run a (pid 1") {
		t.Fatalf("second run: %v", err)
	}
	files := journalFiles(t, js)
	if strings.Join(files, " ") != "gpu-settings-GPU-0.json gpu-settings-GPU-1.json" {
		t.Errorf("files %q", files)
	}
	if j, _ := ReadJournal(filepath.Join(js.Dirs[0], "gpu-settings-GPU-1.json")); j == nil || j.RunID != "a" {
		t.Errorf("GPU 1's journal %+v", j)
	}
	// And through Apply: the second run is refused, nothing changed.
	f := newFake(2)
	if _, err := Apply(f, Request{AllW: 250}, ApplyOptions{Journals: js}); err == nil || !strings.Contains(err.Error(), "never restored") {
		t.Errorf("apply with journals outstanding: %v", err)
	}
	if w, _, _ := f.state(0); w != 400 {
		t.Errorf("GPU 0 changed: %v W", w)
	}
}

// The first directory cannot be written (not root): the journal goes to
// the fallback, and every directory is read.
func TestJournalFallback(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes any directory")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	js := Journals{Dirs: []string{filepath.Join(ro, "joulebench"), filepath.Join(t.TempDir(), "user")}}
	s, err := Apply(newFake(1), Request{AllW: 300}, ApplyOptions{Journals: js, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if s.JournalDir() != js.Dirs[1] {
		t.Errorf("journal in %q, want the fallback", s.JournalDir())
	}
	if err := js.Check(); err == nil || !strings.Contains(err.Error(), js.Dirs[1]) {
		t.Errorf("check: %v", err)
	}
	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	only := Journals{Dirs: js.Dirs[:1]}
	if _, err := Apply(newFake(1), Request{AllW: 300}, ApplyOptions{Journals: only}); err == nil || !strings.Contains(err.Error(), "no directory can be written") {
		t.Errorf("no directory writable: %v", err)
	}
}

// SetRunID rewrites the run's journals with the archive's id.
func TestSetRunID(t *testing.T) {
	js := tempJournals(t)
	s, err := Apply(newFake(2), Request{AllW: 300}, ApplyOptions{Journals: js, RunID: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunID("base-2"); err != nil {
		t.Fatal(err)
	}
	found, err := js.Find()
	if err != nil || len(found) != 2 || found[0].Journal.RunID != "base-2" || found[1].Journal.RunID != "base-2" || found[1].Journal.Devices[0].Index != 1 {
		t.Errorf("found %+v, %v", found, err)
	}
	if err := s.Restore(); err != nil || len(journalFiles(t, js)) != 0 {
		t.Errorf("restore: %v", err)
	}
}

// Refused before anything changes or is journalled.
func TestApplyRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		f    func(*fake)
		js   bool
		want string
	}{
		{"above max", Request{AllW: 450}, nil, true, "GPU 0 (Fake GPU): power limit 450 W is outside its allowed range 100-400 W (default 400 W)"},
		{"no such GPU", Request{PerGPU: map[int]float64{2: 200}}, nil, true, "no GPU 2 (GPUs present: 0, 1)"},
		{"clocks", Request{Locks: locks(clocks(100, 1200), nil)}, nil, true, "clocks 100,1200 MHz are outside its supported SM clocks 210-1410 MHz"},
		{"memory clocks", Request{Locks: locks(nil, clocks(1215, 1593))}, nil, true, "memory clocks 1215,1593 MHz are outside its supported memory clocks 1215-1215 MHz"},
		{"devices", Request{AllW: 200}, func(f *fake) {
			f.fail = func(op string, _ int) error {
				if op == "devices" {
					return errors.New("driver gone")
				}
				return nil
			}
		}, true, "GPU settings: read the GPUs: driver gone"},
		{"no journal directory", Request{AllW: 200}, nil, false, "no journal directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(2)
			if tc.f != nil {
				tc.f(f)
			}
			var js Journals
			if tc.js {
				js = tempJournals(t)
			}
			s, err := Apply(f, tc.req, ApplyOptions{Journals: js})
			if s != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for _, c := range f.calls {
				if strings.HasPrefix(c, "set-") {
					t.Errorf("changed: %s", c)
				}
			}
			if tc.js && len(journalFiles(t, js)) != 0 {
				t.Error("journal written")
			}
		})
	}
	if s, err := Apply(newFake(1), Request{}, ApplyOptions{}); s != nil || err != nil {
		t.Errorf("empty request: %v, %v", s, err)
	}
}

// What devices cannot do: every problem listed.
func TestCheckUnsupported(t *testing.T) {
	devs := []DeviceState{{Index: 0, Name: "Old GPU"}}
	err := Check(Request{AllW: 200, Locks: locks(clocks(900, 1200), clocks(800, 800))}, devs)
	for _, want := range []string{"its power limit cannot be changed", "its SM clocks cannot be locked", "its memory clocks cannot be locked", "nothing changed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err := Check(Request{AllW: 200}, nil); err == nil || !strings.Contains(err.Error(), "no GPU") {
		t.Errorf("no GPUs: %v", err)
	}
	if err := Check(Request{}, nil); err != nil {
		t.Errorf("empty request: %v", err)
	}
}

// A change the driver refuses on GPU 1 after GPU 0 took it: GPU 0 is put
// back, the journals are gone, and NO_PERMISSION says how to grant it.
func TestApplyAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		req      Request
		want     string
	}{
		{"power", "set-power", Request{AllW: 250}, "GPU 1: set power limit 250 W"},
		{"clocks", "set-clocks", Request{Locks: locks(clocks(900, 1200), nil)}, "GPU 1: lock SM clocks 900,1200 MHz"},
		{"memory clocks", "set-mem", Request{Locks: locks(nil, clocks(1215, 1215))}, "GPU 1: lock memory clocks 1215,1215 MHz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(2)
			f.fail = func(op string, index int) error {
				if op == tc.op && index == 1 {
					return ErrNoPermission
				}
				return nil
			}
			js := tempJournals(t)
			_, err := Apply(f, tc.req, ApplyOptions{Journals: js})
			if !errors.Is(err, ErrNoPermission) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "needs root") ||
				!strings.Contains(err.Error(), "every GPU was restored") {
				t.Fatalf("error %v", err)
			}
			if w, c, m := f.state(0); w != 400 || c != (Clocks{}) || m != (Clocks{}) {
				t.Errorf("GPU 0 not restored: %v W, %v, %v", w, c, m)
			}
			if left := journalFiles(t, js); len(left) != 0 {
				t.Errorf("journals left %q", left)
			}
		})
	}
}

// A read-back that differs (or fails) fails the apply and restores.
func TestApplyReadBack(t *testing.T) {
	f := newFake(1)
	f.readBackOffsetW = 5
	restoring := false
	f.fail = func(op string, _ int) error {
		if op == "set-power" && restoring {
			f.readBackOffsetW = 0
		}
		restoring = restoring || op == "power"
		return nil
	}
	_, err := Apply(f, Request{AllW: 250}, ApplyOptions{Journals: tempJournals(t)})
	if err == nil || !strings.Contains(err.Error(), "GPU 0: power limit read back 255 W, asked 250 W: the setting did not take") {
		t.Errorf("limit read back: %v", err)
	}
	if w, _, _ := f.state(0); w != 400 {
		t.Errorf("not restored: %v W", w)
	}

	f = newFake(1)
	f.clocksReadable = true
	f.fail = func(op string, _ int) error {
		if op == "clocks" {
			return errors.New("query failed")
		}
		return nil
	}
	if _, err := Apply(f, Request{Locks: locks(clocks(900, 1200), nil)}, ApplyOptions{Journals: tempJournals(t)}); err == nil || !strings.Contains(err.Error(), "read the locked clocks back: query failed") {
		t.Errorf("clocks read back fails: %v", err)
	}

	f = newFake(1)
	f.fail = func(op string, _ int) error {
		if op == "power" {
			return errors.New("query failed")
		}
		return nil
	}
	if _, err := Apply(f, Request{AllW: 250}, ApplyOptions{Journals: tempJournals(t)}); err == nil || !strings.Contains(err.Error(), "read the power limit back: query failed") ||
		!strings.Contains(err.Error(), "read the restored power limit back") {
		t.Errorf("limit read back fails (and so does its restore's): %v", err)
	}

	// Clocks that cannot be read back (NVML): said so, not an error.
	f = newFake(1)
	s, err := Apply(f, Request{Locks: locks(clocks(900, 1200), nil)}, ApplyOptions{Journals: tempJournals(t)})
	if err != nil || !strings.Contains(s.Record().Devices[0].ClocksNote, "cannot report locked clocks") {
		t.Fatalf("clocks unreadable: %v", err)
	}
	_ = s.Restore()

	// Clocks read back other than asked.
	f = newFake(1)
	f.clocksReadable = true
	f.fail = func(op string, _ int) error {
		if op == "clocks" {
			f.gpus[0].clocks = Clocks{900, 1100}
		}
		return nil
	}
	if _, err := Apply(f, Request{Locks: locks(clocks(900, 1200), nil)}, ApplyOptions{Journals: tempJournals(t)}); err == nil ||
		!strings.Contains(err.Error(), "GPU 0: locked clocks read back 900,1100 MHz, asked 900,1200 MHz") {
		t.Errorf("clocks read back differ: %v", err)
	}
}

// A restore that fails on GPU 1: GPU 0's journal goes, GPU 1's stays and
// the error names it; the record says "failed" with what failed.
func TestRestoreFailsKeepsJournal(t *testing.T) {
	f := newFake(2)
	js := tempJournals(t)
	s, err := Apply(f, Request{AllW: 250, Locks: locks(clocks(900, 1200), clocks(1215, 1215))}, ApplyOptions{Journals: js, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	f.fail = func(op string, index int) error {
		if index == 1 && op != "power" {
			return errors.New("driver refused")
		}
		return nil
	}
	err = s.Restore()
	kept := filepath.Join(js.Dirs[0], "gpu-settings-GPU-1.json")
	for _, want := range []string{"GPU settings not restored", "GPU 1: restore power limit 400 W: driver refused", "GPU 1: unlock SM clocks", "GPU 1: unlock memory clocks", "the journal " + kept + " keeps", "joulebench restore"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if files := journalFiles(t, js); strings.Join(files, " ") != "gpu-settings-GPU-1.json" {
		t.Errorf("journals left %q, want GPU 1's only", files)
	}
	if r := s.Record(); r.Restore != record.RestoreFailed || !strings.Contains(r.RestoreError, "GPU 1") {
		t.Errorf("record %q %q", r.Restore, r.RestoreError)
	}
	if w, _, _ := f.state(0); w != 400 {
		t.Errorf("GPU 0 not restored: %v", w)
	}
	// A power limit restored that reads back otherwise.
	f2 := newFake(1)
	s, err = Apply(f2, Request{AllW: 250}, ApplyOptions{Journals: tempJournals(t)})
	if err != nil {
		t.Fatal(err)
	}
	f2.readBackOffsetW = 1
	if err := s.Restore(); err == nil || !strings.Contains(err.Error(), "GPU 0: restored power limit reads back 401 W, not 400 W") {
		t.Errorf("restore read back: %v", err)
	}
}

// The monitor samples every device until stopped; the formal stage's
// summary and notes follow what the clocks said: GPU 0 capped (bound),
// GPU 1 never capped (never bound, noted), GPU 2 unread (unknown,
// noted), GPU 3 failing reads (no readings: no note).
func TestMonitorSummariseFormal(t *testing.T) {
	f := newFake(4)
	f.gpus[0].sample = Sample{SMClockMHz: 1200, PowerCap: true}
	f.gpus[2].sample = Sample{SMClockMHz: 1400, ReasonsUnread: true}
	f.fail = func(op string, index int) error {
		if op == "sample" && index == 3 {
			return errors.New("gone")
		}
		return nil
	}
	s, err := Apply(f, Request{AllW: 300}, ApplyOptions{Journals: tempJournals(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Restore()
	var clock float64
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	tick := func() float64 { <-mu; clock++; c := clock; mu <- struct{}{}; return c }
	s.StartMonitor(context.Background(), tick, time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.samples)
		s.mu.Unlock()
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.SummariseFormal(1, 1e9)
	rec := s.Record()
	b0, b1, b2, b3 := rec.Devices[0].Formal, rec.Devices[1].Formal, rec.Devices[2].Formal, rec.Devices[3].Formal
	if b0.CapBound == nil || !*b0.CapBound || *b0.PowerCapShare != 1 || b0.MeanSMClockMHz != 1200 {
		t.Errorf("GPU 0 %+v", b0)
	}
	if b1.CapBound == nil || *b1.CapBound || b1.MeanSMClockMHz != 1410 {
		t.Errorf("GPU 1 %+v", b1)
	}
	if b2.CapBound != nil || b2.PowerCapShare != nil || b2.ReasonsUnread != b2.Samples {
		t.Errorf("GPU 2 %+v", b2)
	}
	if b3.Samples != 0 {
		t.Errorf("GPU 3 %+v", b3)
	}
	if len(rec.Notes) != 2 || !strings.Contains(rec.Notes[0], "never bound in the formal stage on GPU 1:") ||
		!strings.Contains(rec.Notes[1], "unknown on GPU 2 (") {
		t.Errorf("notes %q", rec.Notes)
	}
	s.Note("a note")
	if n := s.Record().Notes; n[len(n)-1] != "a note" {
		t.Errorf("notes %q", n)
	}
	var nilSession *Session
	nilSession.StartMonitor(context.Background(), tick, time.Second)
	nilSession.SummariseFormal(0, 1)
	if nilSession.Restore() != nil || nilSession.SetRunID("x") != nil || nilSession.Restored() != "" || nilSession.JournalDir() != "" {
		t.Error("a nil session does something")
	}
}

// `joulebench restore`: journals left by a killed run in the state
// directory ($JOULEBENCH_STATE_DIR) are applied and cleared; a GPU no
// longer present is reported and its journal kept; a journal of another
// controller is refused and kept; a failed restore keeps its journal.
func TestRestoreJournals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	js := Journals{Dirs: []string{dir}}
	getenv := func(k string) string {
		if k == StateDirEnv {
			return dir
		}
		return ""
	}
	var out bytes.Buffer
	opened := 0
	f := newFake(3)
	open := func() (Controller, error) { opened++; return f, nil }
	if err := Restore(&out, getenv, open); err != nil || !strings.Contains(out.String(), "no GPU settings to restore (no journal in "+dir+")") || opened != 0 {
		t.Fatalf("no journal: %v, %q, opened %d", err, out.String(), opened)
	}
	f.gpus[0].limitW, f.gpus[0].clocks = 250, Clocks{900, 1200}
	f.gpus[1].memClocks = Clocks{1215, 1215}
	write := func(name string, j *Journal) {
		if err := WriteJournal(filepath.Join(dir, name), j); err != nil {
			t.Fatal(err)
		}
	}
	write("gpu-settings-GPU-0.json", &Journal{RunID: "killed", Controller: "nvml", Devices: []JournalDevice{{Index: 0, UUID: "GPU-0", PreviousPowerLimitW: 400, GPUSettingResets: record.GPUSettingResets{ResetClocks: true}}}})
	write("gpu-settings-GPU-gone.json", &Journal{RunID: "killed", Controller: "nvml", Devices: []JournalDevice{{Index: 5, UUID: "GPU-gone", PreviousPowerLimitW: 400}}})
	// An earlier version's journal, by index, all GPUs in one file.
	write(JournalFile, &Journal{RunID: "old", Controller: "nvml", Devices: []JournalDevice{{Index: 1, GPUSettingResets: record.GPUSettingResets{ResetMemClocks: true}}}})
	write("gpu-settings-sim.json", &Journal{RunID: "sim", Controller: "sim", Devices: []JournalDevice{{Index: 2}}})
	out.Reset()
	err := Restore(&out, getenv, open)
	for _, want := range []string{"GPU 0 (GPU-0): restored: power limit 400 W, SM clocks unlocked", "GPU 5 (GPU-gone): not present: kept in the journal",
		"GPU 1 (no UUID): restored: memory clocks unlocked", "journal " + filepath.Join(dir, "gpu-settings-GPU-0.json") + " cleared"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if err == nil || !strings.Contains(err.Error(), `written by the "sim" controller, not "nvml"`) || !strings.Contains(err.Error(), "2 GPU(s) not restored") || !f.closed {
		t.Errorf("error %v (closed %v)", err, f.closed)
	}
	if w, c, _ := f.state(0); w != 400 || c != (Clocks{}) {
		t.Errorf("GPU 0: %v W, %v", w, c)
	}
	if _, _, m := f.state(1); m != (Clocks{}) {
		t.Errorf("GPU 1 memory clocks %v", m)
	}
	if files := journalFiles(t, js); strings.Join(files, " ") != "gpu-settings-GPU-gone.json gpu-settings-sim.json" {
		t.Errorf("journals left %q", files)
	}
	// The driver refuses: the journal stays, the error says how to grant.
	os.Remove(filepath.Join(dir, "gpu-settings-sim.json"))
	os.Remove(filepath.Join(dir, "gpu-settings-GPU-gone.json"))
	write("gpu-settings-GPU-2.json", &Journal{RunID: "killed", Controller: "nvml", Devices: []JournalDevice{{Index: 2, UUID: "GPU-2", PreviousPowerLimitW: 300, GPUSettingResets: record.GPUSettingResets{ResetClocks: true, ResetMemClocks: true}}}})
	f.fail = func(op string, _ int) error {
		if strings.HasPrefix(op, "set-") || strings.HasPrefix(op, "reset-") {
			return ErrNoPermission
		}
		return nil
	}
	_, err = RestoreJournals(f, js)
	if !errors.Is(err, ErrNoPermission) || !strings.Contains(err.Error(), "needs root") || len(journalFiles(t, js)) != 1 {
		t.Errorf("refused restore: %v", err)
	}
	f.fail = func(op string, _ int) error {
		if op == "devices" {
			return errors.New("driver gone")
		}
		return nil
	}
	if _, err := RestoreJournals(f, js); err == nil || !strings.Contains(err.Error(), "read the GPUs: driver gone") {
		t.Errorf("devices fail: %v", err)
	}
	if err := Restore(&out, getenv, func() (Controller, error) { return nil, errors.New("no NVML") }); err == nil || !strings.Contains(err.Error(), "restore: no NVML") {
		t.Errorf("no controller: %v", err)
	}
	if err := Restore(&out, func(k string) string { return map[string]string{StateDirEnv: "rel"}[k] }, open); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative state directory: %v", err)
	}
}
