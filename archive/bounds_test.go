package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editArchive replaces the first old in file of the run directory dir
// with new and returns the 1-based line the edit is on.
func editArchive(t *testing.T, dir, file, old, new string) int {
	t.Helper()
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), old)
	if i < 0 {
		t.Fatalf("%s has no %q", file, old)
	}
	s := string(b[:i]) + new + string(b[i+len(old):])
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b[:i]), "\n") + 1
}

// The sample run's lines that the table below edits (testdata/README.md
// has the run): requests.jsonl line 3 is the failed f3, line 4 the
// successful f2 (sent 10.002, first token 10.25, done 12.25: TTFT
// 0.248 s); power.csv rows are one per device per second from line 2.
const (
	f2Sent  = `"sent_at":1717405210.002`
	f2First = `"first_token_at":1717405210.25`
	f2Done  = `"done_at":1717405212.25`
	f2Times = `"token_times":[1717405210.25,1717405211.25,1717405212.25]`
)

// boundCase is one edit of the sample run and what Load must say of it:
// the file and the text of the error ("" when the edit keeps to the
// bounds and must be read).
type boundCase struct {
	name, file, old, new string
	msg                  string
}

// Every numeric field of requests.jsonl, one bound at a time: Load refuses
// a value outside the bounds of docs/archive-v1.md with the file and the
// line, and reads one at the bound.
func requestBoundCases() []boundCase {
	q := func(name, old, new, msg string) boundCase {
		return boundCase{name: name, file: RequestsFile, old: old, new: new, msg: msg}
	}
	return []boundCase{
		q("output_tokens 10^15", `"output_tokens":100,`, `"output_tokens":1000000000000000,`, `request "f2": output_tokens 1000000000000000 is above 4194304`),
		q("output_tokens 1e15", `"output_tokens":100,`, `"output_tokens":1e15,`, "output_tokens"),
		q("output_tokens one above", `"output_tokens":100,`, `"output_tokens":4194305,`, "output_tokens 4194305 is above 4194304"),
		// At the bound, but above f2's own max_tokens (512) and its chunks
		// (token_counts 1+50+49 = 100).
		q("output_tokens at the bound", `"output_tokens":100,`, `"output_tokens":4194304,`, `request "f2": output_tokens 4194304 is above the request's max_tokens 512`),
		q("output_tokens above its chunks", `"output_tokens":100,`, `"output_tokens":101,`, "output_tokens 101 is more than its chunks held (token_counts add up to 100)"),
		q("output_tokens below its chunks", `"output_tokens":100,`, `"output_tokens":99,`, ""),
		q("output_tokens -100", `"output_tokens":100,`, `"output_tokens":-100,`, "output_tokens -100 is negative"),
		q("failed with tokens", `"output_tokens":0,"ok":false`, `"output_tokens":5,"ok":false`, `request "f3": output_tokens 5 in a failed request`),
		q("prompt_tokens negative", `"prompt_tokens":97,`, `"prompt_tokens":-1,`, "prompt_tokens -1 is negative"),
		q("prompt_tokens above", `"prompt_tokens":97,`, `"prompt_tokens":134217729,`, "prompt_tokens 134217729 is above 134217728"),
		q("prompt_tokens at the bound", `"prompt_tokens":97,`, `"prompt_tokens":134217728,`, ""),
		q("reasoning_tokens negative", `"prompt_tokens":97,`, `"prompt_tokens":97,"reasoning_tokens":-3,`, "reasoning_tokens -3 is negative"),
		q("reasoning_tokens above", `"prompt_tokens":97,`, `"prompt_tokens":97,"reasoning_tokens":4194305,`, "reasoning_tokens 4194305 is above"),
		q("output_chars negative", `"output_chars":420,`, `"output_chars":-420,`, "output_chars -420 is negative"),
		q("output_chars above", `"output_chars":420,`, `"output_chars":2147483648,`, "output_chars 2147483648 is above 2147483647"),
		q("max_tokens negative", `"max_tokens":512,"engine":"sim"}
{"id":"f6"`, `"max_tokens":-1,"engine":"sim"}
{"id":"f6"`, "max_tokens -1 is negative"),
		q("distinct_chunks above", `"output_chars":420,`, `"output_chars":420,"distinct_chunks":33,`, "distinct_chunks 33 is above 32"),
		q("distinct_chunks at the bound", `"output_chars":420,`, `"output_chars":420,"distinct_chunks":32,`, ""),
		q("bounded_chunks negative", `"output_chars":420,`, `"output_chars":420,"bounded_chunks":-1,`, "bounded_chunks -1 is negative"),
		q("token_counts negative", `"token_counts":[1,50,49]`, `"token_counts":[1,-50,49]`, "token_counts[1] -50 is negative"),
		q("token_counts above", `"token_counts":[1,50,49]`, `"token_counts":[1,4194305,49]`, "token_counts[1] 4194305 is above"),
		q("first_token_bound_s negative", `"output_chars":420,`, `"output_chars":420,"first_token_bound_s":-0.1,`, "first_token_bound_s -0.1 is negative"),
		// TTFT is 10.25 - 10.002 = 0.248 s.
		q("first_token_bound_s above TTFT", `"output_chars":420,`, `"output_chars":420,"first_token_bound_s":0.3,`, "first_token_bound_s 0.3 is longer than the time to first token"),
		q("first_token_bound_s = TTFT", `"output_chars":420,`, `"output_chars":420,"first_token_bound_s":0.248,`, ""),
		q("engine_timings negative", `"output_chars":420,`, `"output_chars":420,"engine_timings":{"eval_duration":-5},`, "engine_timings.eval_duration -5 is negative"),
		q("engine_timings other name", `"output_chars":420,`, `"output_chars":420,"engine_timings":{"drift":-5},`, ""),
		// Times: present ones in the run's span (started_at 1717405199.8
		// - 60 s to ended_at 1717405230.4 + 60 s) and in order.
		q("negative TTFT", f2Sent, `"sent_at":1717405215.25`, `first_token_at 1717405210.25 is before sent_at 1717405215.25 (5 s earlier)`),
		q("done before first token", f2Done, `"done_at":1717405210.1`, "done_at 1717405210.1 is before token_times[2] 1717405212.25"),
		q("token time before the first token", f2Times, `"token_times":[1717405210.2,1717405211.25,1717405212.25]`, "token_times[0] 1717405210.2 is before first_token_at 1717405210.25"),
		q("token times out of order", f2Times, `"token_times":[1717405210.25,1717405212.25,1717405211.25]`, "token_times[2] 1717405211.25 is before token_times[1] 1717405212.25"),
		q("token time after done", f2Times, `"token_times":[1717405210.25,1717405211.25,1717405212.26]`, "done_at 1717405212.25 is before token_times[2] 1717405212.26"),
		q("sent_at before the run", f2Sent, `"sent_at":1717405139.7`, "sent_at 1717405139.7 is before the run (more than 60 s before run.json's started_at 1717405199.8)"),
		// Inside the run's slack, but before its stage (formal starts at
		// 1717405210).
		q("sent_at just inside the slack", f2Sent, `"sent_at":1717405139.9`, `request "f2" (phase formal) is sent at 1717405139.9, before stage "formal" starts at 1717405210`),
		q("done_at after the run", f2Done, `"done_at":1717405290.5`, "done_at 1717405290.5 is after the run (more than 60 s after run.json's ended_at 1717405230.4)"),
		q("sent_at 0 in a failed request", `"sent_at":1717405210.003`, `"sent_at":0`, ""),
		q("sent_at negative", `"sent_at":1717405210.003`, `"sent_at":-1`, "sent_at -1 is negative"),
	}
}

// Every column of power.csv, and the run.json numbers: stages, events,
// counts.
func powerAndMetaBoundCases() []boundCase {
	p := func(name, old, new, msg string) boundCase {
		return boundCase{name: name, file: PowerFile, old: old, new: new, msg: msg}
	}
	m := func(name, old, new, msg string) boundCase {
		return boundCase{name: name, file: RunFile, old: old, new: new, msg: msg}
	}
	return []boundCase{
		p("t = 0", "1717405209,gpu0,", "0,gpu0,", "column t: t 0 is before the run"),
		// 1000 s back is also before the run; 2 s back is inside it.
		p("t 1000 s back", "1717405209,gpu0,", "1717404209,gpu0,", "column t: t 1717404209 is before the run"),
		p("t 2 s back", "1717405209,gpu0,", "1717405206,gpu0,", "column t: time goes back: device gpu0 at t=1717405206 after t=1717405208 (2 s earlier) on line 18"),
		p("t repeated with another reading", "1717405209,gpu0,", "1717405208,gpu0,", "device gpu0 has a second sample at t=1.717405208e+09 (line 18): one device, one sample per time"),
		p("t after the run", "1717405230,gpu1,", "1717405291,gpu1,", "column t: t 1717405291 is after the run"),
		p("t negative", "1717405200,gpu0,", "-1,gpu0,", "column t: t -1 is negative"),
		p("power_w negative", "1717405209,gpu0,", "1717405209,gpu0,-50,0,0\n1717405209.5,gpu0,", "column power_w: -50 W is negative"),
		p("power_w zero", "1717405209,gpu0,", "1717405209,gpu0,0,1000540,0\n1717405209.5,gpu0,", ""),
		p("energy_j negative", "1717405200,gpu0,60,1000000,", "1717405200,gpu0,60,-1,", "column energy_j: -1 J is negative"),
		p("mem_used_bytes negative", "1717405200,gpu0,60,1000000,536870912", "1717405200,gpu0,60,1000000,-1", "column mem_used_bytes: invalid byte count \"-1\""),
		m("stage ends before it starts", `{"name": "formal", "start": 1717405210, "end": 1717405220}`, `{"name": "formal", "start": 1717405210, "end": 1717405209}`, `stage "formal" ends before it starts (end 1717405209, start 1717405210, 1 s earlier)`),
		m("stage before the run", `{"name": "baseline", "start": 1717405200,`, `{"name": "baseline", "start": 0,`, `stage "baseline": start 0 is before the run`),
		m("stage after the run", `{"name": "release", "start": 1717405220, "end": 1717405230}`, `{"name": "release", "start": 1717405220, "end": 1717405300}`, `stage "release": end 1717405300 is after the run`),
		m("event after the run", `{"name": "release_complete", "t": 1717405225}`, `{"name": "release_complete", "t": 1717405999}`, `event "release_complete": t 1717405999 is after the run`),
		m("event negative", `{"name": "engine_started", "t": 1717405204}`, `{"name": "engine_started", "t": -4}`, `event "engine_started": t -4 is negative`),
		m("ended_at before started_at", `"ended_at": 1717405230.4`, `"ended_at": 1717405100`, "ended_at 1717405100 is before started_at 1717405199.8"),
		m("started_at negative", `"started_at": 1717405199.8`, `"started_at": -1`, "started_at -1 is negative"),
		m("request_set.count negative", `"count": 7,`, `"count": -7,`, "request_set.count -7 is negative"),
		m("unique_prompts negative", `"seed": 42`, `"seed": 42, "unique_prompts": -1`, "request_set.unique_prompts -1 is negative"),
		m("profile.version negative", `"version": 1,`, `"version": -1,`, "profile.version -1 is negative"),
		m("context_length negative", `"context_length": 8192`, `"context_length": -8192`, "engine.context_length -8192 is negative"),
		m("tensor_parallel negative", `"tensor_parallel": 2`, `"tensor_parallel": -2`, "engine.tensor_parallel -2 is negative"),
		m("cpus negative", `"cpus": 16`, `"cpus": -16`, "host.cpus -16 is negative"),
		m("interval_s negative", `"interval_s": 1,`, `"interval_s": -1,`, "telemetry.interval_s -1 is negative"),
		m("clock_sync in bounds", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent http://node1:7070", "host": "node1", "start_offset_s": -86400, "start_rtt_s": 0.001, "end_offset_s": 86400, "end_rtt_s": 0, "probes": 8}],`, ""),
		m("clock_sync offset above a day", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 86400.5, "start_rtt_s": 0.001, "end_offset_s": 2, "end_rtt_s": 0.001}],`, "telemetry.clock_sync[0].start_offset_s 86400.5 is outside ± 86400 s"),
		m("clock_sync end offset below a day", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 2, "start_rtt_s": 0.001, "end_offset_s": -1e6, "end_rtt_s": 0.001}],`, "telemetry.clock_sync[0].end_offset_s -1e+06 is outside ± 86400 s"),
		m("clock_sync rtt negative", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 2, "start_rtt_s": -0.001, "end_offset_s": 2, "end_rtt_s": 0.001}],`, "telemetry.clock_sync[0].start_rtt_s -0.001 is negative"),
		m("clock_sync end rtt negative", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 2, "start_rtt_s": 0.001, "end_offset_s": 2, "end_rtt_s": -1}],`, "telemetry.clock_sync[0].end_rtt_s -1 is negative"),
		m("clock_sync complete run without end", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 2, "start_rtt_s": 0.001}],`, "telemetry.clock_sync[0].end_offset_s is absent but status is complete"),
		m("clock_sync end offset alone", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"source": "agent a", "start_offset_s": 2, "start_rtt_s": 0.001, "end_offset_s": 2}],`, "one without the other"),
		m("clock_sync no source", `"interval_s": 1,`, `"interval_s": 1, "clock_sync": [{"start_offset_s": 2, "start_rtt_s": 0.001, "end_offset_s": 2, "end_rtt_s": 0.001}],`, "telemetry.clock_sync[0].source is empty"),
		m("load in bounds", `"status": "complete",`, `"load": {"mode": "gamma", "rate": 4, "burstiness": 0.5, "max_concurrency": 8}, "status": "complete",`, ""),
		m("load.concurrency negative", `"status": "complete",`, `"load": {"mode": "concurrency", "concurrency": -16}, "status": "complete",`, "load.concurrency -16 is negative"),
		m("load.max_concurrency negative", `"status": "complete",`, `"load": {"mode": "poisson", "rate": 1, "max_concurrency": -2}, "status": "complete",`, "load.max_concurrency -2 is negative"),
		m("load.rate negative", `"status": "complete",`, `"load": {"mode": "poisson", "rate": -1}, "status": "complete",`, "load.rate -1 is negative"),
		m("load.ramp_start_rate negative", `"status": "complete",`, `"load": {"mode": "ramp", "ramp_end_rate": 2, "ramp_start_rate": -0.5}, "status": "complete",`, "load.ramp_start_rate -0.5 is negative"),
		m("gpu_settings in bounds", `"status": "complete",`, `"gpu_settings": {"power_limit_w": "250", "controller": "sim", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 450, "power_limit_default_w": 450, "power_limit_min_w": 100, "power_limit_max_w": 450, "formal": {"samples": 4, "power_cap_share": 0.75, "cap_bound": true, "mean_sm_clock_mhz": 1620, "other_reasons": {"hw_thermal_slowdown": 0.25}}}]}, "status": "complete",`, ""),
		m("gpu_settings limit negative", `"status": "complete",`, `"gpu_settings": {"controller": "sim", "devices": [{"index": 0, "power_limit_read_back_w": -250, "power_limit_previous_w": 450, "power_limit_default_w": 450, "power_limit_min_w": 100, "power_limit_max_w": 450}]}, "status": "complete",`, "gpu_settings.devices[0].power_limit_read_back_w -250 is negative"),
		m("gpu_settings share above 1", `"status": "complete",`, `"gpu_settings": {"controller": "sim", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 450, "power_limit_default_w": 450, "power_limit_min_w": 100, "power_limit_max_w": 450, "formal": {"samples": 4, "power_cap_share": 1.5, "cap_bound": true, "mean_sm_clock_mhz": 1620}}]}, "status": "complete",`, "formal.power_cap_share 1.5 is outside [0, 1]"),
		m("gpu_settings cap_bound contradicts", `"status": "complete",`, `"gpu_settings": {"controller": "sim", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 450, "power_limit_default_w": 450, "power_limit_min_w": 100, "power_limit_max_w": 450, "formal": {"samples": 4, "power_cap_share": 0, "cap_bound": true, "mean_sm_clock_mhz": 1620}}]}, "status": "complete",`, "formal.cap_bound true contradicts power_cap_share 0"),
		m("gpu_settings bound unknown", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 400, "power_limit_default_w": 400, "power_limit_min_w": 100, "power_limit_max_w": 400, "formal": {"samples": 4, "reasons_unread": 4, "mean_sm_clock_mhz": 1410}}]}, "status": "complete",`, ""),
		m("gpu_settings cap_bound false with reasons unread", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 400, "power_limit_default_w": 400, "power_limit_min_w": 100, "power_limit_max_w": 400, "formal": {"samples": 4, "reasons_unread": 1, "power_cap_share": 0, "cap_bound": false, "mean_sm_clock_mhz": 1410}}]}, "status": "complete",`, "formal.cap_bound false though the clock-event reasons of 1 readings were not read"),
		m("gpu_settings reasons_unread above samples", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 400, "power_limit_default_w": 400, "power_limit_min_w": 100, "power_limit_max_w": 400, "formal": {"samples": 4, "reasons_unread": 5, "mean_sm_clock_mhz": 1410}}]}, "status": "complete",`, "formal.reasons_unread 5 is outside [0, samples 4]"),
		m("gpu_settings restore unknown", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "restore": "maybe", "devices": []}, "status": "complete",`, "gpu_settings.restore \"maybe\" is not"),
		m("gpu_settings restore failed without error", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "restore": "failed", "devices": []}, "status": "complete",`, "gpu_settings.restore \"failed\" without restore_error"),
		m("gpu_settings restore failed", `"status": "complete",`, `"gpu_settings": {"controller": "nvml", "restore": "failed", "restore_error": "GPU 0: no permission", "devices": []}, "status": "complete",`, ""),
		m("gpu_settings other reason above 1", `"status": "complete",`, `"gpu_settings": {"controller": "sim", "devices": [{"index": 0, "power_limit_asked_w": 250, "power_limit_read_back_w": 250, "power_limit_previous_w": 450, "power_limit_default_w": 450, "power_limit_min_w": 100, "power_limit_max_w": 450, "formal": {"samples": 4, "power_cap_share": 0, "cap_bound": false, "mean_sm_clock_mhz": 1620, "other_reasons": {"hw_slowdown": 2}}}]}, "status": "complete",`, "formal.other_reasons.hw_slowdown 2 is outside [0, 1]"),
		{name: "engine metric before the run", file: EngineMetricsFile, old: `"t":1717405210.5`, new: `"t":5`, msg: "t 5 is before the run"},
	}
}

func TestLoadEnforcesBounds(t *testing.T) {
	for _, tc := range append(requestBoundCases(), powerAndMetaBoundCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t)
			line := editArchive(t, dir, tc.file, tc.old, tc.new)
			run, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("an edit within the bounds is refused: %v", err)
				}
				assertBounds(t, run)
				return
			}
			where := fmt.Sprintf("%s:%d:", filepath.Join(dir, tc.file), line)
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}

// The files read on their own hold times to Unix seconds only: a file of
// another clock's times is read (Load holds them to the run's span).
func TestReadersOnTheirOwnAcceptAnyTime(t *testing.T) {
	if _, err := ReadPowerCSV(strings.NewReader(hdr+"0,gpu0,1,,\n5,gpu0,1,,\n"), ""); err != nil {
		t.Errorf("power.csv from t=0: %v", err)
	}
	if _, err := ReadRequests(strings.NewReader(okReq+"\n"), ""); err != nil {
		t.Errorf("requests from t=1: %v", err)
	}
	_, err := ReadPowerCSV(strings.NewReader(hdr+"5,gpu0,1,,\n4,gpu0,1,,\n"), "")
	lineErr(t, err, 3, "power.csv:3: column t: time goes back")
}
