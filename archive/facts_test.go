package archive

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// factCase is an edit of the sample run that contradicts what its own
// files state, and where Load must refuse it: the file and line of the
// error (they may differ from the edited file's) and its text ("" for an
// edit that keeps to the facts and must be read).
type factCase struct {
	name, file, old, new string
	errFile              string
	errLine              int
	msg                  string
}

// factCases are the lies of the adversarial pass, one per rule of
// docs/archive-v1.md ("Bounds") that holds the files to run.json. The
// sample run (testdata/sample-run) is complete: formal 1717405210 to
// 1717405220, devices gpu0 and gpu1 (GPUs), requests.jsonl lines 3-9
// formal, status on run.json's line 97.
func factCases() []factCase {
	return []factCase{
		// (a) the formal stage ends 1 s after it starts (the release
		// starting there with it): f2 (line 4; f3 on line 3 failed before
		// it) finishes at 1717405212.25, after it.
		{name: "formal end moved to start + 1 s", file: RunFile,
			old: `{"name": "formal", "start": 1717405210, "end": 1717405220},
    {"name": "release", "start": 1717405220,`, new: `{"name": "formal", "start": 1717405210, "end": 1717405211},
    {"name": "release", "start": 1717405211,`,
			errFile: RequestsFile, errLine: 4, msg: `request "f2" (phase formal): done_at 1717405212.25 is after stage "formal" ends at 1717405211 (run.json; 1.25 s after its end)`},
		// The formal stage starts after its first request is sent
		// (f3 at 1717405210.003, line 3), the startup ending there with
		// it.
		{name: "formal start moved later", file: RunFile,
			old: `"end": 1717405210},
    {"name": "warmup", "start": 1717405208, "end": 1717405210},
    {"name": "formal", "start": 1717405210,`, new: `"end": 1717405210.5},
    {"name": "warmup", "start": 1717405208, "end": 1717405210},
    {"name": "formal", "start": 1717405210.5,`,
			errFile: RequestsFile, errLine: 3, msg: `request "f3" (phase formal) is sent at 1717405210.003, before stage "formal" starts at 1717405210.5`},
		// (b) a row of a device run.json does not list.
		{name: "power of an unlisted device", file: PowerFile, old: "1717405215,gpu1,", new: "1717405215,gpu7,",
			errFile: PowerFile, errLine: 33, msg: `column device: device "gpu7" is not one run.json's hardware.devices lists (gpu0, gpu1)`},
		// (c) power × 10^6: 316 MW on a GPU, above its 5 kW bound.
		{name: "power × 10^6", file: PowerFile, old: "1717405215,gpu0,316,", new: "1717405215,gpu0,316000000,",
			errFile: PowerFile, errLine: 32, msg: "column power_w: 316000000 W is above 5000 W, the most one gpu device draws"},
		{name: "power at a GPU's bound", file: PowerFile, old: "1717405215,gpu0,316,", new: "1717405215,gpu0,5000,"},
		// (c) a power limit of 10^12 W would switch the profiles' power
		// checks off.
		{name: "power_limit_w 10^12", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "power_limit_w": 1e12,`,
			errFile: RunFile, msg: "hardware.devices[0].power_limit_w 1e+12 W is outside [0, 5000], the most one gpu device draws"},
		{name: "power_limit_w of an H100", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "power_limit_w": 700,`},
		{name: "unknown domain", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "domain": "rack",`,
			errFile: RunFile, msg: `hardware.devices[0].domain "rack" is not a power domain (gpu, cpu, dram or node)`},
		// A device role outside record.Roles is refused, naming the device
		// and the value; each known role is read.
		{name: "unknown role", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "prefil",`,
			errFile: RunFile, msg: `hardware.devices[0] (device "gpu0"): role "prefil" is not a device role (prefill, decode, router, replica, or absent for a single-engine run)`},
		{name: "role in another case", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "Prefill",`,
			errFile: RunFile, msg: `role "Prefill" is not a device role`},
		{name: "role prefill", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "prefill",`},
		{name: "role decode", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "decode",`},
		{name: "role router", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "router",`},
		{name: "role replica", file: RunFile, old: `"power_field": "power_usage",`, new: `"power_field": "power_usage", "role": "replica",`},
		// (e) 10^18 J added to a counter: float64's spacing there is 128 J
		// (10^18 + 1002848 reads as 1000000000001002880, written shortest).
		{name: "energy_j + 10^18", file: PowerFile, old: "1717405215,gpu0,316,1002848,", new: "1717405215,gpu0,316,1000000000001002848,",
			errFile: PowerFile, errLine: 32, msg: "column energy_j: 1000000000001002900 J is above 2^43 J (8796093022208 J)"},
		// (h) a status that is none of the four, and keys given twice.
		{name: "unknown status", file: RunFile, old: `"status": "complete",`, new: `"status": "done",`,
			errFile: RunFile, msg: `status "done" is not a run status (running, complete, failed or interrupted)`},
		{name: "status twice", file: RunFile, old: `"status": "complete",`, new: `"status": "complete", "status": "running",`,
			errFile: RunFile, msg: `duplicate key "status" in the top level, first on line`},
		{name: "status twice in another case", file: RunFile, old: `"status": "complete",`, new: `"status": "complete", "Status": "running",`,
			errFile: RunFile, msg: `duplicate key "Status" in the top level, first on line 97 (as "status": keys match without regard to case)`},
		{name: "a device's id twice", file: RunFile, old: `"id": "gpu1",`, new: `"id": "gpu1", "id": "gpu0",`,
			errFile: RunFile, msg: `duplicate key "id" in hardware.devices[1]`},
		// (f) a complete run whose stage never ended.
		{name: "complete with an open stage", file: RunFile,
			old: `{"name": "release", "start": 1717405220, "end": 1717405230}`, new: `{"name": "release", "start": 1717405220}`,
			errFile: RunFile, msg: `status is complete but stage "release" has no end`},
	}
}

func TestLoadHoldsFilesToTheirFacts(t *testing.T) {
	for _, tc := range factCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t)
			line := editArchive(t, dir, tc.file, tc.old, tc.new)
			run, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("an edit that keeps to the facts is refused: %v", err)
				}
				assertBounds(t, run)
				return
			}
			if tc.errFile == tc.file && tc.errLine == 0 {
				tc.errLine = line
			}
			where := fmt.Sprintf("%s:%d:", filepath.Join(dir, tc.errFile), tc.errLine)
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}

// The token times' fast path (a time within bounds is passed without
// formatting its name) keeps every rule of the slow one: the first token
// time of a request with no earlier time still bounds the next, and each
// message names the right entries.
func TestTokenTimesCheckedWithoutNames(t *testing.T) {
	for _, tc := range []struct{ line, msg string }{
		{`{"id":"a","phase":"formal","ok":false,"output_tokens":0,"token_times":[5,3]}`, "token_times[1] 3 is before token_times[0] 5"},
		{`{"id":"b","phase":"formal","ok":false,"output_tokens":0,"sent_at":1,"token_times":[2,4,6,5]}`, "token_times[3] 5 is before token_times[2] 6"},
		{`{"id":"c","phase":"formal","ok":false,"output_tokens":0,"sent_at":1,"token_times":[2,4],"done_at":3}`, "done_at 3 is before token_times[1] 4"},
		{`{"id":"d","phase":"formal","ok":false,"output_tokens":0,"sent_at":1,"token_times":[2,-4]}`, "token_times[1] -4 is negative"},
		{`{"id":"e","phase":"formal","ok":false,"output_tokens":0,"sent_at":1,"token_times":[2,0,3],"done_at":4}`, ""},
	} {
		_, err := ReadRequests(strings.NewReader(tc.line+"\n"), "")
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.line, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.msg)
		}
	}
}
