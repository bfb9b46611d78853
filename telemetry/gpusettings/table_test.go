package gpusettings

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Every setting of the table is validated by its kind, and its errors name
// its flag: a limit takes W for every GPU or INDEX=W; a lock MIN,MAX with
// MIN at most MAX. A value parsed is what Request.String gives back, in
// canonical form, and what SplitSets takes out of --set values.
func TestTableValidation(t *testing.T) {
	cases := map[record.GPUSettingKind][]struct {
		in, want, err string
	}{
		record.GPULimit: {
			{"250", "250", ""}, {"250W", "250", ""}, {"1=300, 0=250", "0=250,1=300", ""},
			{"0", "", "expected a power limit in watts above 0"},
			{"0=250,300", "", "expected INDEX=W"},
			{"1e6", "", "expected a power limit in watts above 0"},
		},
		record.GPULock: {
			{"900,1200", "900,1200", ""}, {" 1215 , 1215 ", "1215,1215", ""},
			{"1200", "", "expected MIN,MAX in MHz"},
			{"1500,1200", "", "MIN 1500 is above MAX 1200"},
			{"0,1200", "", "whole numbers of MHz above 0"},
		},
	}
	for _, s := range record.GPUSettingsTable() {
		for _, tc := range cases[s.Kind] {
			t.Run(s.Key+"/"+tc.in, func(t *testing.T) {
				var v record.GPUSettingValues
				*s.Value(&v) = tc.in
				r, err := ParseRequest(v)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "--"+s.Flag+" ") {
						t.Errorf("error %v, want --%s ... %s", err, s.Flag, tc.err)
					}
					return
				}
				if err != nil || r.String(s) != tc.want || r.Empty() {
					t.Errorf("%q: %q, %v; want %q", tc.in, r.String(s), err, tc.want)
				}
				for _, o := range record.GPUSettingsTable() {
					if o.Key != s.Key && r.String(o) != "" {
						t.Errorf("%s asked too: %q", o.Key, r.String(o))
					}
				}
				rest, sv, given := SplitSets([]string{"a=1", s.Param + "=" + tc.in})
				if len(rest) != 1 || sv != v || !given {
					t.Errorf("SplitSets: %v %+v %v", rest, sv, given)
				}
			})
		}
	}
}

// Check refuses, for every lock of the table, a device that cannot lock it
// and a range outside the device's, naming the setting.
func TestTableCheckLocks(t *testing.T) {
	for _, s := range record.GPUSettingsTable() {
		if s.Kind != record.GPULock {
			continue
		}
		t.Run(s.Key, func(t *testing.T) {
			req := Request{Locks: map[string]Clocks{s.Key: {MinMHz: 900, MaxMHz: 1200}}}
			dev := DeviceState{Index: 3, Name: "G"}
			if err := Check(req, []DeviceState{dev}); err == nil || !strings.Contains(err.Error(), "GPU 3 (G): its "+s.Name+" cannot be locked: not supported") {
				t.Errorf("unsupported: %v", err)
			}
			dev.Locks = map[string]Clocks{s.Key: {MinMHz: 1000, MaxMHz: 2000}}
			// 900 is below the device's 1000.
			if err := Check(req, []DeviceState{dev}); err == nil || !strings.Contains(err.Error(), s.Short+" 900,1200 MHz are outside its supported "+s.Name+" 1000-2000 MHz") {
				t.Errorf("out of range: %v", err)
			}
			dev.Locks[s.Key] = Clocks{MinMHz: 900, MaxMHz: 1200}
			if err := Check(req, []DeviceState{dev}); err != nil {
				t.Errorf("in range: %v", err)
			}
		})
	}
}

// restore's help names every setting's flag, as the journals it restores
// come from runs given any of them.
func TestRestoreHelpNamesEveryFlag(t *testing.T) {
	h := RestoreHelp()
	if !strings.HasPrefix(h, "restore reads the journals that a run with --gpu-power-limit, --gpu-clocks or\n--gpu-mem-clocks writes") {
		t.Errorf("help begins %q", h[:120])
	}
	for _, s := range record.GPUSettingsTable() {
		if !strings.Contains(h, "--"+s.Flag+" ") && !strings.Contains(h, "--"+s.Flag+",") {
			t.Errorf("help does not name --%s", s.Flag)
		}
	}
}
