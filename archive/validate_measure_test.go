package archive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// measureCopy copies testdata/name (a run of joulebench measure on the
// simulator, testdata/README.md) into a new directory and returns it.
func measureCopy(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{RunFile, PowerFile, RequestsFile, EngineMetricsFile} {
		copyFile(t, filepath.Join("testdata", name, f), filepath.Join(dir, f))
	}
	return dir
}

// The two measured runs of testdata: measure-run (no result file: one
// synthetic request "measured-window" over the formal stage carrying the
// counter's 89 tokens, tokens_before 0, tokens_after 89) and
// measure-run-results (an AIPerf result file: 4 requests results-1 …
// results-4 of 20 + 23 + 24 + 22 = 89 tokens, measure.results.requests
// 4 and output_tokens 89; the counter also moved by 89).
const (
	measureRun        = "measure-run"
	measureRunResults = "measure-run-results"
	// The synthetic request's line and the measure object's counter.
	synthLine  = `"output_tokens":89,"tokens_source":"engine","ok":true,"synthetic":true}`
	counterOut = `"output_tokens": 89,
    "requests"`
	tokensAfter = `"tokens_after": 89,`
)

// liveTraffic makes measure-run a run of live traffic over d (duration_s
// secs): no command, no exit status.
func liveTraffic(d, secs string) [][3]string {
	return [][3]string{
		{RunFile, `"load": "command",
    "command": [
      "loadgen",
      "--rate",
      "4",
      "--api-key=[redacted]"
    ],
    "exit_status": 0,`, `"load": "live traffic over ` + d + `",
    "duration_s": ` + secs + `,`},
		{RunFile, `"source": "not sent by joulebench: the command loadgen --rate 4 --api-key=[redacted]"`, `"source": "not sent by joulebench: live traffic over ` + d + `"`},
	}
}

// measureEdit is edits (file, old, new; in order) of a measured run and
// what the refusal must say: the file (run.json or requests.jsonl) and
// the words naming the field.
type measureEdit struct {
	name, run string
	edits     [][3]string
	file      string
	want      []string
}

// Each edit of a measured run that would change its figures (or make a
// measured run read as another kind of run) is refused, naming the file
// and the field (docs/archive-v1.md, Bounds, "measured runs"). Every
// case was an attack on an archive of joulebench measure on the
// simulator that gave other figures with exit 0
// (runner/observe.TestMeasureCommand's and TestMeasureWithResults's).
func TestMeasuredRunRules(t *testing.T) {
	for _, tc := range []measureEdit{
		// The counter moved by 89 − 0 = 89; 1089 tokens claimed with the
		// request raised to match: J/token 12 times lower.
		{"output tokens above the counter's difference", measureRun, [][3]string{
			{RunFile, counterOut, strings.Replace(counterOut, "89", "1089", 1)},
			{RequestsFile, synthLine, strings.Replace(synthLine, "89", "1089", 1)}},
			RunFile, []string{"measure.output_tokens 1089", "tokens_after 89 − tokens_before 0 = 89"}},
		// 0 tokens claimed while the counter moved by 89: J/token not
		// applicable instead of measured.
		{"output tokens zeroed", measureRun, [][3]string{
			{RunFile, counterOut, strings.Replace(counterOut, "89", "0", 1)},
			{RequestsFile, synthLine, strings.Replace(synthLine, "89", "0", 1)}},
			RunFile, []string{"measure.output_tokens 0", "= 89"}},
		{"counter reading edited", measureRun, [][3]string{{RunFile, tokensAfter, `"tokens_after": 1089,`}},
			RunFile, []string{"measure.output_tokens 89", "tokens_after 1089 − tokens_before 0 = 1089"}},
		{"negative counter reading", measureRun, [][3]string{{RunFile, `"tokens_before": 0,`, `"tokens_before": -1000,`}},
			RunFile, []string{"measure.tokens_before -1000 is not a reading of a token counter"}},
		// The synthetic request made to look sent: TTFT and latency
		// figures appear where there is none.
		{"synthetic request made measured", measureRun, [][3]string{{RequestsFile, `,"synthetic":true`, ``}},
			RequestsFile, []string{`request "measured-window"`, "synthetic", "without a result file (measure.results)"}},
		// The 89 tokens split over two requests: the request count of every
		// per-request figure doubles.
		{"synthetic request split", measureRun, [][3]string{{RequestsFile, `{"id":"measured-window"`, `{"id":"measured-window-1"`}},
			RequestsFile, []string{`request "measured-window-1"`, `id "measured-window"`}},
		{"synthetic tokens_source changed", measureRun, [][3]string{{RequestsFile, `"tokens_source":"engine"`, `"tokens_source":"user"`}},
			RequestsFile, []string{`request "measured-window"`, `tokens_source "user"`, `"engine"`}},
		// A startup measure never saw: startup energy and full-lifecycle
		// J/token where they are not applicable.
		{"startup added", measureRun, [][3]string{{RunFile, `"stages": [`, `"stages": [
    {"name": "startup", "start": 1796598488.4808228, "end": 1796598488.4991474},`}},
			RunFile, []string{`stage "startup"`, "joulebench measure did not start the server"}},
		{"load relabelled", measureRun, [][3]string{{RunFile, `"load": "command",`, `"load": "live traffic over 1h0m0s",`}},
			RunFile, []string{`measure.load "live traffic over 1h0m0s"`}},
		{"failed command made complete", measureRun, [][3]string{{RunFile, `"exit_status": 0,`, `"exit_status": 1,`}},
			RunFile, []string{"measure.exit_status 1", "complete"}},
		// The measure object and the release removed, the request made
		// a sent one: the run reads as one joulebench sent, with latency.
		{"measure object removed", measureRun, [][3]string{
			{RunFile, `"measure": {`, `"measured": {`},
			{RunFile, `,
    {
      "name": "release",
      "start": 1796598489.1952558,
      "end": 1796598490.428175
    }`, ``},
			{RequestsFile, `,"synthetic":true`, ``}},
			RunFile, []string{`request_set.source "not sent by joulebench: the command loadgen --rate 4 --api-key=[redacted]"`, "no measure object"}},
		// The formal stage started 0.5 s earlier (into the baseline), the
		// request moved with it: more energy in the formal stage.
		{"formal stage moved before engine_ready", measureRun, [][3]string{
			{RunFile, `"end": 1796598488.4808228`, `"end": 1796598487.9808228`},
			{RunFile, `"start": 1796598488.4991474`, `"start": 1796598487.9991474`},
			{RequestsFile, `"sent_at":1796598488.4991474,"first_token_at":1796598488.4991474`, `"sent_at":1796598487.9991474,"first_token_at":1796598487.9991474`}},
			RunFile, []string{`stage "formal" starts at 1796598487.9991474`, `before the event "engine_ready"`}},
		// The same with engine_ready moved too: the baseline of 1.0027 s
		// (parameters.baseline 1 s) is left with 0.5027 s.
		{"formal stage, baseline and engine_ready moved", measureRun, [][3]string{
			{RunFile, `"end": 1796598488.4808228`, `"end": 1796598487.9808228`},
			{RunFile, `"start": 1796598488.4991474`, `"start": 1796598487.9991474`},
			{RunFile, `"t": 1796598488.4882567`, `"t": 1796598487.9882567`},
			{RequestsFile, `"sent_at":1796598488.4991474,"first_token_at":1796598488.4991474`, `"sent_at":1796598487.9991474,"first_token_at":1796598487.9991474`}},
			RunFile, []string{`stage "baseline" lasts 0.5027 s`, "parameters.baseline 1 s"}},
		// A window of live traffic over 1 s whose formal stage lasts
		// 1796598489.1952558 − 1796598488.4991474 = 0.6961 s: cut short
		// (less energy for the same tokens).
		{"live traffic window cut short", measureRun, liveTraffic("1s", "1"),
			RunFile, []string{`stage "formal" lasts 0.6961 s`, "measure.duration_s 1 s"}},
		// One request of the result file raised by 1000 tokens: J/token
		// 12 times lower.
		{"result request raised", measureRunResults, [][3]string{{RequestsFile, `"output_tokens":23,`, `"output_tokens":1023,`}},
			RunFile, []string{"measure.results.output_tokens is 89", "carry 1089"}},
		{"result request added", measureRunResults, [][3]string{{RequestsFile, `{"id":"results-1",`, `{"id":"results-9","phase":"formal","sent_at":1796615874.0299213,"first_token_at":1796615874.0380802,"done_at":1796615874.0380802,"output_tokens":1,"tokens_source":"user","ok":true}
{"id":"results-1",`}},
			RunFile, []string{"measure.results.requests is 4", "holds 5"}},
		// Every request's first token moved to its end (a load that did
		// not stream, which measure does not use): TPOT read 0.00 ms.
		{"result requests not streamed", measureRunResults, notStreamed(t),
			RequestsFile, []string{`request "results-1"`, "first_token_at is done_at", "not streamed"}},
		{"result count edited", measureRunResults, [][3]string{{RunFile, `"requests": 4,`, `"requests": 40,`}},
			RunFile, []string{"measure.results.requests is 40", "holds 4"}},
		{"result file dropped", measureRunResults, [][3]string{{RunFile, `"results": {`, `"dropped": {`}},
			RequestsFile, []string{`request "results-1"`, "without a result file (measure.results)"}},
		{"result tokens_source changed", measureRunResults, [][3]string{{RequestsFile, `"output_tokens":23,"tokens_source":"user"`, `"output_tokens":23,"tokens_source":"engine"`}},
			RequestsFile, []string{`request "results-2"`, `tokens_source "engine"`, `"user"`}},
		// The file's tokens raised with measure.results to match: 1089
		// against the counter's 89, at most 89 + max(16, 8) = 105.
		{"result tokens above the counter", measureRunResults, [][3]string{
			{RequestsFile, `"output_tokens":23,`, `"output_tokens":1023,`},
			{RunFile, `"output_tokens": 89
    }`, `"output_tokens": 1089
    }`}},
			RunFile, []string{"measure.results.output_tokens 1089", "89 by the server's counter"}},
		// The release removed: its figures not applicable instead of
		// measured.
		{"release removed", measureRun, [][3]string{{RunFile, `,
    {
      "name": "release",
      "start": 1796598489.1952558,
      "end": 1796598490.428175
    }`, ``}},
			RunFile, []string{`no stage "release"`}},
		// A request of the result file marked synthetic: left out of
		// every latency figure.
		{"result request made synthetic", measureRunResults, [][3]string{{RequestsFile, `"output_tokens":23,"tokens_source":"user","ok":true}`, `"output_tokens":23,"tokens_source":"user","ok":true,"synthetic":true}`}},
			RequestsFile, []string{`request "results-2": synthetic in a run of joulebench measure with a result file`}},
		// An import object beside the measure object: the run would read
		// as both.
		{"import object added", measureRun, [][3]string{{RunFile, `"measure": {`, `"import": {"format": "csv", "files": [], "window": "formal", "requests": "synthetic", "output_tokens": 89},
  "measure": {`}},
			RunFile, []string{"run.json has both import and measure"}},
		{"result format unknown", measureRunResults, [][3]string{{RunFile, `"format": "aiperf",`, `"format": "other",`}},
			RunFile, []string{`measure.results.format "other"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := measureCopy(t, tc.run)
			for _, e := range tc.edits {
				editArchive(t, dir, e[0], e[1], e[2])
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded without an error")
			}
			for _, w := range append([]string{filepath.Join(dir, tc.file) + ":"}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// The measured runs of testdata keep to every rule, and so do the states
// a measure run's writer leaves (steps.finishObserve): a counter not read
// after the load (tokens_after 0, no tokens), one that went back, one
// that did not move, and a window above the tokens synthetic requests
// can carry (MaxMeasuredTokens).
func TestMeasuredRunsKeepTheRules(t *testing.T) {
	for _, name := range []string{measureRun, measureRunResults} {
		if _, err := Load(filepath.Join("testdata", name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	t.Run("result tokens within 16 of the counter", func(t *testing.T) {
		// 89 + 8 = 97 ≤ 89 + max(16, 8) = 105.
		dir := measureCopy(t, measureRunResults)
		editArchive(t, dir, RequestsFile, `"output_tokens":23,`, `"output_tokens":31,`)
		editArchive(t, dir, RunFile, `"output_tokens": 89
    }`, `"output_tokens": 97
    }`)
		if _, err := Load(dir); err != nil {
			t.Error(err)
		}
	})
	t.Run("no power measured: no baseline", func(t *testing.T) {
		// Without a power source the baseline step records no stage
		// (steps.measuresNothing); the release stage is still recorded.
		dir := measureCopy(t, measureRun)
		editArchive(t, dir, RunFile, `"devices": [
      {
        "id": "gpu0",
        "name": "test GPU",
        "method": "power",
        "domain": "gpu"
      }
    ],
`, ``)
		editArchive(t, dir, RunFile, `{
      "name": "baseline",
      "start": 1796598487.4781618,
      "end": 1796598488.4808228
    },
`, ``)
		if err := os.WriteFile(filepath.Join(dir, PowerFile), []byte("t,device,power_w,energy_j,mem_used_bytes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err != nil {
			t.Error(err)
		}
	})
	t.Run("live traffic", func(t *testing.T) {
		// 0.6961 s of formal stage ≥ 0.99 × 0.5 − 0.05.
		dir := measureCopy(t, measureRun)
		for _, e := range liveTraffic("500ms", "0.5") {
			editArchive(t, dir, e[0], e[1], e[2])
		}
		if _, err := Load(dir); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct{ name, before, after string }{
		{"counter not read after", `"tokens_before": 0,`, `"tokens_after": 0,`},
		{"counter went back", `"tokens_before": 500,`, `"tokens_after": 0,`},
		{"counter did not move", `"tokens_before": 500,`, `"tokens_after": 500,`},
		{"above the cap", `"tokens_before": 0,`, fmt.Sprintf(`"tokens_after": %d,`, MaxMeasuredTokens+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := measureCopy(t, measureRun)
			editArchive(t, dir, RunFile, `"tokens_before": 0,`, tc.before)
			editArchive(t, dir, RunFile, tokensAfter, tc.after)
			editArchive(t, dir, RunFile, counterOut, strings.Replace(counterOut, "89", "0", 1))
			if err := os.WriteFile(filepath.Join(dir, RequestsFile), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			editArchive(t, dir, RunFile, `"count": 1`, `"count": 0`)
			if _, err := Load(dir); err != nil {
				t.Error(err)
			}
		})
	}
}

// notStreamed is the edits that put every request of measure-run-results
// at its first token's end: first_token_at := done_at.
func notStreamed(t *testing.T) [][3]string {
	b, err := os.ReadFile(filepath.Join("testdata", measureRunResults, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	var edits [][3]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var q struct {
			FirstTokenAt json.Number `json:"first_token_at"`
			DoneAt       json.Number `json:"done_at"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&q); err != nil {
			t.Fatal(err)
		}
		edits = append(edits, [3]string{RequestsFile, `"first_token_at":` + q.FirstTokenAt.String() + ",", `"first_token_at":` + q.DoneAt.String() + ","})
	}
	return edits
}
