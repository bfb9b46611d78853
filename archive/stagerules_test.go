package archive

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The sample run's stages and events (testdata/README.md), as run.json
// writes them; times are T0 = 1717405200 plus the seconds below.
const (
	baselineStage = `{"name": "baseline", "start": 1717405200, "end": 1717405204}`
	startupStage  = `{"name": "startup", "start": 1717405204, "end": 1717405210}`
	warmupStage   = `{"name": "warmup", "start": 1717405208, "end": 1717405210}`
	formalStage   = `{"name": "formal", "start": 1717405210, "end": 1717405220}`
	releaseStage  = `{"name": "release", "start": 1717405220, "end": 1717405230}`
	engineReady   = `{"name": "engine_ready", "t": 1717405207.6}`
	engineStarted = `{"name": "engine_started", "t": 1717405204}`
	engineExited  = `{"name": "engine_exited", "t": 1717405221.3}`
)

// fileEdit is one replacement in one file of the run.
type fileEdit struct{ file, old, new string }

func stageEdit(old, new string) fileEdit { return fileEdit{RunFile, old, new} }

// stageCase is a sample run edited by edits and what Load says of it:
// the error's text, in run.json at the line of its edit number at (of
// its edits of run.json; -1: at another line, or none), or "" when it is
// read.
type stageCase struct {
	name  string
	edits []fileEdit
	at    int
	msg   string
}

// startupAndFormalFrom moves the startup's end and the formal stage's
// start (where they meet) to t and engine_ready to ready, with the
// warm-up stage taken out (a run with warmup_requests 0: the startup then
// has nothing of its own inside but engine_ready; the warm-up requests
// are held to no stage), and then makes the edits more.
func startupAndFormalFrom(t, ready string, more ...fileEdit) []fileEdit {
	return append([]fileEdit{stageEdit("\n    "+warmupStage+",", ""),
		stageEdit(startupStage, `{"name": "startup", "start": 1717405204, "end": `+t+`}`),
		stageEdit(formalStage, `{"name": "formal", "start": `+t+`, "end": 1717405220}`),
		stageEdit(engineReady, `{"name": "engine_ready", "t": `+ready+`}`)}, more...)
}

// trace adds request_set.trace, a replayed trace's window from start_s
// and of duration_s (0: to the end of the trace), at scale 2.
func trace(startS, durationS string) fileEdit {
	return stageEdit(`"seed": 42`, `"seed": 42, "trace": {"file": "t.csv", "format": "azure", "sha256": "00", "start_s": `+startS+
		`, "duration_s": `+durationS+`, "scale": 2, "requests": 7, "total_rows": 100}`)
}

func stageCases() []stageCase {
	return []stageCase{
		// 1. Stages may not overlap or overrun.
		{"formal start 5 s earlier, into the startup", []fileEdit{stageEdit(formalStage, `{"name": "formal", "start": 1717405205, "end": 1717405220}`)}, 0,
			`stage "formal" starts at 1717405205, before stage "startup" ends at 1717405210 (5 s earlier)`},
		{"formal end at the release's end", []fileEdit{stageEdit(formalStage, `{"name": "formal", "start": 1717405210, "end": 1717405230}`)}, -1,
			`stage "release" starts at 1717405220, before stage "formal" ends at 1717405230 (10 s earlier)`},
		{"warm-up into the formal stage", []fileEdit{stageEdit(warmupStage, `{"name": "warmup", "start": 1717405208, "end": 1717405211}`)}, -1,
			`stage "formal" starts at 1717405210, before stage "warmup" ends at 1717405211`},
		{"startup ends before the formal stage starts", []fileEdit{stageEdit(startupStage, `{"name": "startup", "start": 1717405204, "end": 1717405209.5}`)}, -1,
			`stage "startup" ends at 1717405209.5 but stage "formal" starts at 1717405210 (0.5 s later)`},
		{"release starts after the formal stage ends", []fileEdit{stageEdit(releaseStage, `{"name": "release", "start": 1717405221, "end": 1717405230}`)}, 0,
			`stage "release" starts at 1717405221 but stage "formal" ends at 1717405220 (1 s earlier)`},
		{"stage after an open one", []fileEdit{stageEdit(`"status": "complete"`, `"status": "running"`),
			stageEdit(formalStage, `{"name": "formal", "start": 1717405210}`)}, -1,
			`stage "release" starts at 1717405220, but stage "formal", before it, has no end`},
		{"startup and formal moved together, formal 5 s before its first request", startupAndFormalFrom("1717405205", "1717405204.5"), -1,
			`stage "formal" starts at 1717405205, 5 s before its first request is sent (request "f0" at 1717405210, `},
		{"startup and formal moved together by 1.5 s", startupAndFormalFrom("1717405208.5", "1717405207.6"), 0, ""},
		// A replayed trace sends its first request at its time in the
		// window: up to duration_s × scale (here 2 × 2 s) later.
		{"formal 5 s before a trace window's first request", startupAndFormalFrom("1717405205", "1717405204.5", trace("100", "2")), 0, ""},
		{"formal 7 s before a trace window's first request", startupAndFormalFrom("1717405203", "1717405202.5",
			stageEdit(baselineStage, `{"name": "baseline", "start": 1717405200, "end": 1717405202}`),
			stageEdit(engineStarted, `{"name": "engine_started", "t": 1717405202}`),
			stageEdit(`"name": "startup", "start": 1717405204`, `"name": "startup", "start": 1717405202`),
			trace("100", "2")), -1,
			`stage "formal" starts at 1717405203, 7 s before its first request is sent`},
		{"formal 5 s before a whole trace's first request", startupAndFormalFrom("1717405205", "1717405204.5", trace("0", "0")), -1,
			`stage "formal" starts at 1717405205, 5 s before its first request is sent`},
		{"formal 5 s before a trace window's first request, to the end", startupAndFormalFrom("1717405205", "1717405204.5", trace("100", "0")), 0, ""},

		{"formal and release moved together, formal 1 s after its last response",
			[]fileEdit{stageEdit(formalStage, `{"name": "formal", "start": 1717405210, "end": 1717405221}`),
				stageEdit(releaseStage, `{"name": "release", "start": 1717405221, "end": 1717405230}`)}, -1,
			`stage "formal" ends at 1717405221, 1 s after its last response (request "f4" done_at 1717405220, `},

		// 2. A zero-length startup; events and nested stages outside
		// their stage.
		{"zero-length startup", []fileEdit{stageEdit(startupStage, `{"name": "startup", "start": 1717405204, "end": 1717405204}`)}, -1,
			`stage "startup" ends at 1717405204 but stage "formal" starts at 1717405210`},
		{"engine_ready after the startup", []fileEdit{stageEdit(engineReady, `{"name": "engine_ready", "t": 1717405211}`)}, 0,
			`event "engine_ready" at 1717405211 is outside stage "startup" (1717405204 to 1717405210)`},
		{"engine_started before the startup", []fileEdit{stageEdit(engineStarted, `{"name": "engine_started", "t": 1717405203}`)}, 0,
			`event "engine_started" at 1717405203 is outside stage "startup" (1717405204 to 1717405210)`},
		{"engine_exited after the release", []fileEdit{stageEdit(engineExited, `{"name": "engine_exited", "t": 1717405230.5}`)}, 0,
			`event "engine_exited" at 1717405230.5 is outside stage "release" (1717405220 to 1717405230)`},
		{"warm-up starts before the startup", []fileEdit{stageEdit(startupStage, `{"name": "startup", "start": 1717405208.5, "end": 1717405210}`)}, -1,
			`stage "warmup" starts at 1717405208, before stage "startup", which it lies inside, starts at 1717405208.5`},

		// 9a. A managed run without its release is not an external one.
		{"managed run without its release", []fileEdit{stageEdit(",\n    "+releaseStage, "")}, -1,
			`stage "startup" is present but there is no "release" stage`},
		{"external engine with a startup", []fileEdit{stageEdit(`"managed": true`, `"managed": false`), stageEdit(",\n    "+releaseStage, "")}, -1,
			`stage "startup" is present but there is no "release" stage`},
		{"managed run without its startup", []fileEdit{stageEdit("\n    "+startupStage+",", ""), stageEdit(engineStarted+",", "")}, -1,
			`stage "release" is present but there is no "startup" stage`},
		{"managed run without its startup and release", append([]fileEdit{stageEdit(`"managed": true`, `"managed": true`)}, external()[1:]...), 0,
			`engine.managed is true but there is no "startup" or "release" stage`},
		{"engine_started without a startup", append(external(), stageEdit(`"events": [`, `"events": [`+engineStarted+`,`)), len(external()),
			`event "engine_started" at 1717405204 has no stage "startup" to lie in`},
		{"engine_exited in a complete external run", append(external(), stageEdit(`"events": [`, `"events": [`+engineExited+`,`)), len(external()),
			`event "engine_exited" at 1717405221.3 has no stage "release" to lie in`},
		{"an external engine's run", external(), 0, ""},
		{"a profile's own stage and event", []fileEdit{stageEdit(releaseStage, releaseStage+`, {"name": "cooldown", "start": 1717405205, "end": 1717405225}`),
			stageEdit(engineReady, engineReady+`, {"name": "throttled", "t": 1717405231}`)}, 0, ""},

		// 9d. A run_id that is not a safe name.
		{"run_id with a path", []fileEdit{stageEdit(`"run_id": "20240603T090000Z-sample"`, `"run_id": "../../etc/x"`)}, 0,
			`run_id "../../etc/x": starts with '.'`},
		{"run_id with a slash", []fileEdit{stageEdit(`"run_id": "20240603T090000Z-sample"`, `"run_id": "runs/x"`)}, 0,
			`run_id "runs/x": character '/' at byte 4 is not allowed`},
		{"run_id empty", []fileEdit{stageEdit(`"run_id": "20240603T090000Z-sample"`, `"run_id": ""`)}, 0,
			`run_id: empty`},
	}
}

// external edits the sample run into an external engine's: not managed,
// no startup, release or events of starting and stopping the engine.
func external() []fileEdit {
	return []fileEdit{stageEdit(`"managed": true`, `"managed": false`),
		stageEdit("\n    "+startupStage+",", ""), stageEdit(",\n    "+releaseStage, ""),
		stageEdit("\n    "+engineStarted+",", ""), stageEdit(",\n    "+engineExited, ""),
		stageEdit(`,
    {"name": "memory_released", "t": 1717405222},
    {"name": "release_complete", "t": 1717405225}`, "")}
}

// Every edit of the stages and events above is refused with run.json, the
// line of the field and what is wrong, or read when it keeps to the
// rules.
func TestStageRules(t *testing.T) {
	for _, tc := range stageCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t)
			var lines []int
			for _, e := range tc.edits {
				line := editArchive(t, dir, e.file, e.old, e.new)
				if e.file == RunFile {
					lines = append(lines, line)
				}
			}
			_, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			where := filepath.Join(dir, RunFile) + ":"
			if tc.at >= 0 {
				where += fmt.Sprint(lines[tc.at]) + ":"
			}
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}
