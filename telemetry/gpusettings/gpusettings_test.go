package gpusettings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		power, clocks     string
		wantPower, wantCk string
		err               string
	}{
		{"250", "", "250", "", ""},
		{"250W", "", "250", "", ""},
		{"1=300, 0=250", "", "0=250,1=300", "", ""},
		{"", "1200,1500", "", "1200,1500", ""},
		{"", "", "", "", ""},
		{"0", "", "", "", "--gpu-power-limit \"0\": expected a power limit in watts above 0"},
		{"abc", "", "", "", "expected a power limit in watts"},
		{"0=250,300", "", "", "", "\"300\": expected INDEX=W for every GPU"},
		{"0=250,0=300", "", "", "", "GPU 0 is given twice"},
		{"-1=250", "", "", "", "the GPU index must be a whole number 0 or more"},
		{"", "1500", "", "", "--gpu-clocks \"1500\": expected MIN,MAX"},
		{"", "1500,1200", "", "", "MIN 1500 is above MAX 1200"},
		{"", "0,1200", "", "", "whole numbers of MHz above 0"},
	} {
		r, err := ParseRequest(record.GPUSettingValues{PowerLimit: tc.power, Clocks: tc.clocks})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: error %v, want %q", tc.power, tc.clocks, err, tc.err)
			}
			continue
		}
		if err != nil || r.PowerLimitString() != tc.wantPower || r.String(record.GPUSettingsTable()[1]) != tc.wantCk || r.Empty() != (tc.power == "" && tc.clocks == "") {
			t.Errorf("%q %q: %+v (%q, %q), %v", tc.power, tc.clocks, r, r.PowerLimitString(), r.String(record.GPUSettingsTable()[1]), err)
		}
	}
}

func TestSplitSets(t *testing.T) {
	rest, v, given := SplitSets([]string{"a=1", "gpu_power_limit_w=0=250,1=300", "gpu_clocks=900,1200", "b=2", "gpu_mem_clocks=1215,1215"})
	if strings.Join(rest, " ") != "a=1 b=2" || v != (record.GPUSettingValues{PowerLimit: "0=250,1=300", Clocks: "900,1200", MemClocks: "1215,1215"}) || !given {
		t.Errorf("%v %q %v", rest, v, given)
	}
	if _, _, given := SplitSets([]string{"a=1"}); given {
		t.Error("given without a GPU setting")
	}
}

// The journals are machine-wide (/var/lib/joulebench) with the user's
// state directory as the fallback, whatever HOME says (sudo -E keeps the
// caller's); JOULEBENCH_STATE_DIR alone when set, and absolute.
func TestDefaultJournals(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want []string
		err  string
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, []string{"/var/lib/joulebench", "/s/joulebench"}, ""},
		{map[string]string{"HOME": "/h"}, []string{"/var/lib/joulebench", "/h/.local/state/joulebench"}, ""},
		// A relative XDG_STATE_HOME is invalid (XDG base directory spec): ignored.
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, []string{"/var/lib/joulebench", "/h/.local/state/joulebench"}, ""},
		{map[string]string{"JOULEBENCH_STATE_DIR": "/srv/jb/", "HOME": "/h"}, []string{"/srv/jb"}, ""},
		{map[string]string{"JOULEBENCH_STATE_DIR": "jb"}, nil, "must be an absolute path"},
	} {
		js, err := DefaultJournals(env(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(js.Dirs, " ") != filepath.FromSlash(strings.Join(tc.want, " ")) {
			t.Errorf("%v: %q, %v", tc.env, js.Dirs, err)
		}
	}
	if s := (Journals{Dirs: []string{"/a", "/b"}}).String(); s != "/a (or /b)" {
		t.Errorf("String %q", s)
	}
}

// A journal written, read back, removed; a damaged one is an error naming
// it; every user can read it (their runs refuse while it is there).
func TestJournalFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	js := Journals{Dirs: []string{dir}}
	path := filepath.Join(dir, JournalPrefix+"GPU-1"+JournalSuffix)
	if j, err := ReadJournal(path); j != nil || err != nil {
		t.Fatalf("no journal: %+v, %v", j, err)
	}
	if err := js.Check(); err != nil {
		t.Fatalf("no journal directory yet: %v", err)
	}
	want := &Journal{RunID: "r", PID: 7, Created: "2026-12-01T00:00:00Z", Controller: "nvml", Devices: []JournalDevice{{Index: 1, UUID: "GPU-1", PreviousPowerLimitW: 400, GPUSettingResets: record.GPUSettingResets{ResetClocks: true}}}}
	if err := WriteJournal(path, want); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	got, err := ReadJournal(path)
	if err != nil || got.RunID != "r" || len(got.Devices) != 1 || got.Devices[0] != want.Devices[0] {
		t.Errorf("read %+v, %v", got, err)
	}
	if err := js.Check(); err == nil || !strings.Contains(err.Error(), "run r (pid 7") || !strings.Contains(err.Error(), path) {
		t.Errorf("check: %v", err)
	}
	if err := RemoveJournal(path); err != nil || RemoveJournal(path) != nil {
		t.Errorf("remove: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"run_id": "r", "bogus": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJournal(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("damaged journal: %v", err)
	}
	if err := js.Check(); err == nil {
		t.Error("a damaged journal lets a run start")
	}
	// A journal directory that is a file is an error, not "no journal".
	if err := (Journals{Dirs: []string{path}}).Check(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("directory a file: %v", err)
	}
}

// The formal stage [10, 20] of four readings in it and two outside:
//
//	t    clock  cap  other
//	 5   1980   no   -            (before: left out)
//	10   1500   yes  -
//	12   1400   yes  hw_thermal
//	15   1980   no   -
//	18   -1 (a failed read: left out)
//	20   1600   yes  -
//	25   1980   no   -            (after: left out)
//
// 4 readings; the cap in 3: share 0.75; mean clock (1500 + 1400 + 1980 +
// 1600)/4 = 6480/4 = 1620 MHz; hw_thermal in 1 of 4: 0.25.
func TestSummarise(t *testing.T) {
	s := func(c float64, cap bool, other ...string) []Sample {
		return []Sample{{SMClockMHz: c, PowerCap: cap, Other: other}}
	}
	samples := []timedSample{{5, s(1980, false)}, {10, s(1500, true)}, {12, s(1400, true, "hw_thermal")}, {15, s(1980, false)},
		{18, s(-1, false)}, {20, s(1600, true)}, {25, s(1980, false)}}
	b := summarise(samples, 0, 10, 20)
	if b.Samples != 4 || b.PowerCapShare == nil || *b.PowerCapShare != 0.75 || b.CapBound == nil || !*b.CapBound || b.MeanSMClockMHz != 1620 || b.OtherReasons["hw_thermal"] != 0.25 {
		t.Errorf("summary %+v", b)
	}
	if b := summarise(samples, 0, 30, 40); b.Samples != 0 || b.CapBound != nil || b.PowerCapShare != nil {
		t.Errorf("empty window %+v", b)
	}
}

// Readings whose clock-event reasons were not read (ReasonsUnread):
//
//	t   clock  cap      reasons
//	10  1500   -        unread
//	12  1400   no       read
//	14  1300   no       read
//	16  1200   -        unread
//
// 4 readings, 2 unread; the cap in 0 of the 2 read: share 0, but whether
// it bound is unknown (nil), never false; mean clock (1500 + 1400 + 1300 +
// 1200)/4 = 1350. With every reading unread: no share at all. With the
// cap seen in a read one: bound, share 1 of 2 read = 0.5.
func TestSummariseReasonsUnread(t *testing.T) {
	unread := func(c float64) []Sample { return []Sample{{SMClockMHz: c, ReasonsUnread: true}} }
	read := func(c float64, cap bool) []Sample { return []Sample{{SMClockMHz: c, PowerCap: cap}} }
	samples := []timedSample{{10, unread(1500)}, {12, read(1400, false)}, {14, read(1300, false)}, {16, unread(1200)}}
	b := summarise(samples, 0, 10, 20)
	if b.Samples != 4 || b.ReasonsUnread != 2 || b.CapBound != nil || b.PowerCapShare == nil || *b.PowerCapShare != 0 || b.MeanSMClockMHz != 1350 {
		t.Errorf("partly unread %+v", b)
	}
	b = summarise([]timedSample{{10, unread(1500)}, {12, unread(1400)}}, 0, 10, 20)
	if b.Samples != 2 || b.ReasonsUnread != 2 || b.CapBound != nil || b.PowerCapShare != nil {
		t.Errorf("all unread %+v", b)
	}
	samples[2] = timedSample{14, read(1300, true)}
	b = summarise(samples, 0, 10, 20)
	if b.CapBound == nil || !*b.CapBound || *b.PowerCapShare != 0.5 {
		t.Errorf("cap seen %+v", b)
	}
}
