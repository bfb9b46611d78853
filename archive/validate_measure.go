package archive

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// The rules on a run of joulebench measure (run.json has a measure
// object; docs/measure.md): its output tokens are the server counter's
// difference, its requests the synthetic ones that carry them or the
// load generator's result file's, and it has no startup (joulebench did
// not start the server). docs/archive-v1.md, Bounds, "measured runs".

// MaxMeasuredTokens bounds the output tokens of a window joulebench
// measure counted: 199 synthetic requests (one below a built-in
// profile's steady state, as an import's) of MaxOutputTokens each.
const MaxMeasuredTokens = 199 * MaxOutputTokens

// MeasuredRequestID is the id of the synthetic request of a measured
// window (id-1, id-2, … when its tokens are split over several).
const MeasuredRequestID = "measured-window"

// measuredSourcePrefix begins the request_set.source of a measured run:
// what generated its load, which joulebench did not send.
const measuredSourcePrefix = "not sent by joulebench: "

// maxCounterReading bounds a reading of a token counter: 2^53, the
// largest count a float64 holds exactly.
const maxCounterReading = 1 << 53

// measureMetaRules are the rules on a measured run's run.json, held
// after metaRules; measuredRequestsMatch, the rule across its files, is
// held before runRules (metaDoc.validate and decodedRun.validate).
func measureMetaRules() []func(*metaDoc) error {
	return []func(*metaDoc) error{
		measuredNotImported,
		measuredRequestSetSaysItsLoad,
		measureCounterReadingsInBounds,
		measureOutputTokensAreTheCounters,
		measureLoadSaysWhatRan,
		measuredCompleteCommandExitedZero,
		measuredRunHasNoStartup,
		measuredFormalAfterEngineReady,
		measureResultsInBounds,
		measureResultTokensWithinCounter,
		measuredCompleteRunHasItsStages,
		measuredStagesLastTheirWait,
	}
}

// measuredNotImported: a run is imported (joulebench import: run.json's
// import) or measured (joulebench measure: measure), not both; each holds
// its requests to its own output_tokens.
func measuredNotImported(d *metaDoc) error {
	if d.m.Measure != nil && d.m.Import != nil {
		return d.at("run.json has both import and measure: a run is imported (joulebench import) or measured around a load joulebench did not send (joulebench measure), not both", "import")
	}
	return nil
}

// describeMeasuredLoad is what request_set.source says generated a
// measured run's load after measuredSourcePrefix (steps.describeLoad).
func describeMeasuredLoad(ms *record.MeasureInfo) string {
	if len(ms.Command) > 0 {
		return strings.Join(ms.Command, " ")
	}
	return ms.Load
}

// measuredRequestSetSaysItsLoad: a measured run's request_set.source says
// what generated the load, as measure wrote it; a source saying so in a
// run without a measure object (removed, so that the run reads as one
// joulebench sent) is refused.
func measuredRequestSetSaysItsLoad(d *metaDoc) error {
	src := d.m.RequestSet.Source
	ms := d.m.Measure
	if ms == nil {
		if strings.HasPrefix(src, measuredSourcePrefix) {
			return d.at(fmt.Sprintf("request_set.source %q says a load joulebench did not send (joulebench measure), but run.json has no measure object saying how its tokens were counted", src),
				"request_set", "source")
		}
		return nil
	}
	want := measuredSourcePrefix
	if len(ms.Command) > 0 {
		want += "the command "
	}
	want += describeMeasuredLoad(ms)
	if src != want {
		return d.at(fmt.Sprintf("request_set.source %q in a run of joulebench measure, want %q (what its measure object says generated the load)", src, want),
			"request_set", "source")
	}
	return nil
}

// measureCounterReadingsInBounds: the counter's readings are counts (0 ..
// 2^53) and measure.output_tokens is within 0 .. MaxMeasuredTokens.
func measureCounterReadingsInBounds(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil {
		return nil
	}
	for _, r := range []struct {
		key string
		v   float64
	}{{"tokens_before", ms.TokensBefore}, {"tokens_after", ms.TokensAfter}} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > maxCounterReading {
			return d.at(fmt.Sprintf("measure.%s %v is not a reading of a token counter (a count, 0 .. 2^53)", r.key, r.v), "measure", r.key)
		}
	}
	if ms.OutputTokens < 0 || ms.OutputTokens > MaxMeasuredTokens {
		return d.at(fmt.Sprintf("measure.output_tokens %d is outside 0 .. %d (the tokens a measured window's synthetic requests can carry)", ms.OutputTokens, MaxMeasuredTokens),
			"measure", "output_tokens")
	}
	return nil
}

// measureOutputTokensAreTheCounters: measure.output_tokens is the
// counter's difference, round(tokens_after − tokens_before); 0 only when
// the counter was not read after the load (tokens_after 0: not read, or
// it went back), did not move, or moved by more than MaxMeasuredTokens
// (steps.finishObserve).
func measureOutputTokensAreTheCounters(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil {
		return nil
	}
	diff := math.Round(ms.TokensAfter - ms.TokensBefore)
	switch {
	case ms.OutputTokens > 0 && float64(ms.OutputTokens) == diff:
		return nil
	case ms.OutputTokens == 0 && (ms.TokensAfter == 0 || diff == 0 || diff > MaxMeasuredTokens):
		return nil
	}
	return d.at(fmt.Sprintf("measure.output_tokens %d is not the counter's difference: tokens_after %v − tokens_before %v = %v; a measured window's output tokens are the server counter's difference (0 only when the counter was not read after the load, did not move, or moved by more than %d)",
		ms.OutputTokens, ms.TokensAfter, ms.TokensBefore, diff, MaxMeasuredTokens), "measure", "output_tokens")
}

// measureLoadSaysWhatRan: measure.load is "command" when a command ran
// (measure.command), else "live traffic over D" with duration_s D > 0;
// only a command has an exit_status.
func measureLoadSaysWhatRan(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil {
		return nil
	}
	if len(ms.Command) > 0 {
		if ms.Load != "command" || ms.DurationS != 0 {
			return d.at(fmt.Sprintf("measure.load %q with duration_s %v, but measure.command holds the command whose lifetime was the formal stage: load \"command\", no duration_s", ms.Load, ms.DurationS),
				"measure", "load")
		}
		return nil
	}
	if math.IsNaN(ms.DurationS) || ms.DurationS <= 0 || ms.DurationS > 365*86400 {
		return d.at(fmt.Sprintf("measure.duration_s %v: a run of joulebench measure without a command measured live traffic over a window (duration_s > 0)", ms.DurationS), "measure", "duration_s")
	}
	if want := "live traffic over " + time.Duration(math.Round(ms.DurationS*1e9)).String(); ms.Load != want {
		return d.at(fmt.Sprintf("measure.load %q, want %q (measure.duration_s %v, no command)", ms.Load, want, ms.DurationS), "measure", "load")
	}
	if ms.ExitStatus != nil {
		return d.at("measure.exit_status without a command: live traffic has no exit status", "measure", "exit_status")
	}
	return nil
}

// measuredCompleteCommandExitedZero: a complete measured run's command
// exited on its own with status 0 (a command that fails, or ends on a
// signal, fails the run).
func measuredCompleteCommandExitedZero(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil || len(ms.Command) == 0 || d.m.Status != record.StatusComplete {
		return nil
	}
	switch {
	case ms.ExitStatus == nil:
		return d.at(fmt.Sprintf("measure.exit_status is absent (exit_reason %q) in a complete run: a measured command that did not exit on its own fails the run", ms.ExitReason), "measure")
	case *ms.ExitStatus != 0:
		return d.at(fmt.Sprintf("measure.exit_status %d in a complete run: a measured command that exits with another status than 0 fails the run (status failed)", *ms.ExitStatus), "measure", "exit_status")
	}
	return nil
}

// measuredRunHasNoStartup: joulebench measure did not start the server,
// so a measured run has no startup (nor warm-up) stage and its engine is
// not managed: a startup added would give startup energy and a
// full-lifecycle J/token that were never measured.
func measuredRunHasNoStartup(d *metaDoc) error {
	if d.m.Measure == nil {
		return nil
	}
	for i, st := range d.m.Stages {
		if st.Name == record.StageStartup || st.Name == record.StageWarmup {
			return d.at(fmt.Sprintf("stage %q in a run of joulebench measure (run.json has measure): joulebench measure did not start the server, so it has no startup or warm-up to measure", st.Name),
				"stages", i, "name")
		}
	}
	if managed(d.m) {
		return d.at("engine.managed is true in a run of joulebench measure: joulebench measure did not start the server", "engine", "managed")
	}
	return nil
}

// measuredFormalAfterEngineReady: a measured run's formal stage begins
// after the event engine_ready (the start_engine step found the server
// answering before the observe step read the counter and began the
// stage): a formal stage moved earlier, into the baseline, would take
// energy that was not the load's.
func measuredFormalAfterEngineReady(d *metaDoc) error {
	if d.m.Measure == nil {
		return nil
	}
	fi := -1
	for i, st := range d.m.Stages {
		if st.Name == record.StageFormal {
			fi = i
		}
	}
	if fi < 0 {
		return nil
	}
	formal := d.m.Stages[fi]
	ready := math.Inf(1)
	for _, ev := range d.m.Events {
		if ev.Name == record.EventEngineReady {
			ready = math.Min(ready, ev.T)
		}
	}
	if math.IsInf(ready, 1) {
		return d.at(fmt.Sprintf("a run of joulebench measure with a formal stage has no event %q: the server was found answering before the formal stage began", record.EventEngineReady), "events")
	}
	if formal.Start < ready-stageSlackS {
		return d.at(fmt.Sprintf("stage \"formal\" starts at %s, before the event \"engine_ready\" at %s; a run of joulebench measure begins its formal stage once the server answered", ft(formal.Start), ft(ready)),
			"stages", fi, "start")
	}
	return nil
}

// The result-file formats and clocks of measure.results
// (importer/loadresults).
var (
	measureResultFormats = []string{"vllm-bench-serve", "guidellm", "aiperf"}
	measureResultClocks  = []string{"unix", "monotonic"}
)

// measureResultsInBounds: measure.results names a format and a clock the
// reader knows, a sha256 of 64 hex digits, and counts within bounds.
func measureResultsInBounds(d *metaDoc) error {
	if d.m.Measure == nil || d.m.Measure.Results == nil {
		return nil
	}
	r := d.m.Measure.Results
	switch {
	case !slices.Contains(measureResultFormats, r.Format):
		return d.at(fmt.Sprintf("measure.results.format %q is not a result file's format (%s)", r.Format, strings.Join(measureResultFormats, ", ")), "measure", "results", "format")
	case !slices.Contains(measureResultClocks, r.Clock):
		return d.at(fmt.Sprintf("measure.results.clock %q is not a result file's clock (%s)", r.Clock, strings.Join(measureResultClocks, ", ")), "measure", "results", "clock")
	case !isSHA256Hex(r.SHA256):
		return d.at(fmt.Sprintf("measure.results.sha256 %q is not a sha256 (64 hex digits)", r.SHA256), "measure", "results", "sha256")
	case r.Requests < 0 || r.OutputTokens < 0 || r.OutputTokens > int64(r.Requests)*MaxOutputTokens:
		return d.at(fmt.Sprintf("measure.results.requests %d and output_tokens %d: counts, at most %d tokens a request", r.Requests, r.OutputTokens, MaxOutputTokens), "measure", "results")
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// measuredRequestsMatch: a measured run's requests are what measure
// wrote. Without a result file, exactly the synthetic requests that carry
// measure.output_tokens over the formal stage (SyntheticRequests: ids
// measured-window[-i], tokens_source engine, nothing else); with one
// (measure.results), none synthetic, as many as measure.results.requests,
// the successful ones with tokens_source user adding up to
// measure.results.output_tokens.
func measuredRequestsMatch(d *decodedRun) error {
	ms := d.meta.m.Measure
	if ms == nil {
		return nil
	}
	if ms.Results != nil {
		return resultRequestsMatch(d, ms.Results)
	}
	formal, _ := d.meta.m.StageByName(record.StageFormal)
	want := SyntheticRequests(ms.OutputTokens, formal.Start, formal.End, MeasuredRequestID, "engine")
	for i := range d.requests.rows {
		q := &d.requests.rows[i]
		if !q.Synthetic {
			return d.requestErr(i, fmt.Sprintf("request %q: synthetic is false in a run of joulebench measure without a result file (measure.results): its requests are the synthetic ones that carry the server counter's tokens over the formal stage, so no latency is measured from them", q.ID))
		}
		if i >= len(want) {
			return d.requestErr(i, fmt.Sprintf("request %q: request %d of a measured window whose %d output tokens (measure.output_tokens) %d synthetic requests carry", q.ID, i+1, ms.OutputTokens, len(want)))
		}
		if msg := measuredSyntheticRequest(q, &want[i], ms.OutputTokens, len(want)); msg != "" {
			return d.requestErr(i, msg)
		}
	}
	if n := len(d.requests.rows); n < len(want) {
		return d.meta.at(fmt.Sprintf("measure.output_tokens %d needs %d synthetic requests, but %s holds %d", ms.OutputTokens, len(want), filepath.Join(d.dir, RequestsFile), n),
			"measure", "output_tokens")
	}
	return nil
}

// measuredSyntheticRequest says why q is not e, the synthetic request
// measure wrote in its place ("" when it is).
func measuredSyntheticRequest(q, e *record.Request, tokens, n int) string {
	switch {
	case q.ID != e.ID:
		return fmt.Sprintf("request %q: a measured window's synthetic request has id %q (measured-window, or measured-window-1 … -%d when the tokens are split)", q.ID, e.ID, n)
	case q.TokensSource != e.TokensSource:
		return fmt.Sprintf("request %q: tokens_source %q; a measured window's synthetic requests carry the server counter's tokens, tokens_source %q", q.ID, q.TokensSource, e.TokensSource)
	case q.OutputTokens != e.OutputTokens:
		return fmt.Sprintf("request %q: output_tokens %d, want %d (measure.output_tokens %d spread over %d synthetic requests, the first ones one more)", q.ID, q.OutputTokens, e.OutputTokens, tokens, n)
	case q.SentAt != e.SentAt || q.FirstTokenAt != e.FirstTokenAt || q.DoneAt != e.DoneAt:
		return fmt.Sprintf("request %q: sent_at %s, first_token_at %s, done_at %s; a synthetic request stands for the formal stage: %s, %s, %s",
			q.ID, ft(q.SentAt), ft(q.FirstTokenAt), ft(q.DoneAt), ft(e.SentAt), ft(e.FirstTokenAt), ft(e.DoneAt))
	case !reflect.DeepEqual(*q, *e):
		return fmt.Sprintf("request %q: a measured window's synthetic request holds only id, phase formal, its window, output_tokens, tokens_source, ok true and synthetic (another field is set: prompt_tokens, error, token_times, …)", q.ID)
	}
	return ""
}

// resultRequestsMatch holds a measured run's requests to its result file
// r (measure.results).
func resultRequestsMatch(d *decodedRun, r *record.MeasureResults) error {
	var tokens int64
	for i := range d.requests.rows {
		q := &d.requests.rows[i]
		switch {
		case q.Synthetic:
			return d.requestErr(i, fmt.Sprintf("request %q: synthetic in a run of joulebench measure with a result file (measure.results): its requests are the file's, each with its own times", q.ID))
		case q.OK && q.TokensSource != "user":
			return d.requestErr(i, fmt.Sprintf("request %q: tokens_source %q; the requests of a result file carry the tool's token counts, tokens_source \"user\"", q.ID, q.TokensSource))
		case q.OK:
			tokens += int64(q.OutputTokens)
		}
	}
	reqs := filepath.Join(d.dir, RequestsFile)
	if n := len(d.requests.rows); n != r.Requests {
		return d.meta.at(fmt.Sprintf("measure.results.requests is %d but %s holds %d: a measured run's requests are its result file's, every one (lines added or deleted?)", r.Requests, reqs, n),
			"measure", "results", "requests")
	}
	if tokens != r.OutputTokens {
		return d.meta.at(fmt.Sprintf("measure.results.output_tokens is %d but the successful requests of %s carry %d; a measured run's requests carry the result file's tokens (tokens edited?)", r.OutputTokens, reqs, tokens),
			"measure", "results", "output_tokens")
	}
	return resultRequestsStreamed(d)
}

// resultRequestsStreamed refuses a result file's requests of which none
// was streamed: every successful one of two or more output tokens has
// its first token at its end, which measure does not use (a tool that
// did not stream states the latency as the time to first token; TPOT
// would read 0). One such request among streamed ones is a response
// that came in one chunk.
func resultRequestsStreamed(d *decodedRun) error {
	first := -1
	for i := range d.requests.rows {
		q := &d.requests.rows[i]
		if !q.OK || q.OutputTokens < 2 {
			continue
		}
		if q.FirstTokenAt != q.DoneAt {
			return nil
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return d.requestErr(first, fmt.Sprintf("request %q: first_token_at is done_at, as for every successful request of two or more output tokens of this result file: its responses were not streamed, which joulebench measure does not use (times edited?)", d.requests.rows[first].ID))
}

// MaxResultTokensOver is how far a measured run's result file may count
// output tokens above the server's counter: 10 % of the counter's, at
// least 16 tokens (the tool counts with its own tokenizer). The counter
// counts every token the server generated in the window, so a file
// counting more by over that counts tokens that were not generated.
func MaxResultTokensOver(counted int) int { return max(16, counted/10) }

// measureResultTokensWithinCounter: a result file's output tokens
// (measure.results.output_tokens) are at most MaxResultTokensOver above
// the server counter's, when the counter was read after the load and
// moved within bounds (measure.output_tokens > 0) or did not move (0).
func measureResultTokensWithinCounter(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil || ms.Results == nil {
		return nil
	}
	counted := ms.OutputTokens
	if counted == 0 && (ms.TokensAfter == 0 || math.Round(ms.TokensAfter-ms.TokensBefore) != 0) {
		return nil // not read after the load, or above MaxMeasuredTokens: no count to hold the file to
	}
	if over := MaxResultTokensOver(counted); ms.Results.OutputTokens > int64(counted+over) {
		return d.at(fmt.Sprintf("measure.results.output_tokens %d is above the server's count: %d by the server's counter (measure.output_tokens), at most %d more by the result file (10 %%, at least 16: the tool's own tokenizer); the counter counts every token the server generated in the window, so the file counts tokens that were not generated",
			ms.Results.OutputTokens, counted, over), "measure", "results", "output_tokens")
	}
	return nil
}

// measuredCompleteRunHasItsStages: a complete run of joulebench measure
// has the stages its profile measures, formal and release, and baseline
// when it measured power (hardware.devices lists a device: without a
// power source the baseline step records no stage): one removed would
// make its figures not applicable instead of measured.
func measuredCompleteRunHasItsStages(d *metaDoc) error {
	if d.m.Measure == nil || d.m.Status != record.StatusComplete {
		return nil
	}
	for _, name := range []string{record.StageBaseline, record.StageFormal, record.StageRelease} {
		if name == record.StageBaseline && len(d.m.Hardware.Devices) == 0 {
			continue
		}
		if _, ok := d.m.StageByName(name); !ok {
			return d.at(fmt.Sprintf("no stage %q in a complete run of joulebench measure: it measures the baseline, the formal stage and the release back to baseline (a stage removed?)", name), "stages")
		}
	}
	return nil
}

// measuredStagesLastTheirWait: in a complete measured run, the baseline
// stage lasts its parameters.baseline and, for live traffic, the formal
// stage its measure.duration_s (seconds): the baseline and observe steps
// wait that long between two samples. 1 % and 50 ms of clock slack are
// allowed. A baseline cut short would let the formal stage move into it;
// a window cut short would give less energy for the same tokens.
func measuredStagesLastTheirWait(d *metaDoc) error {
	ms := d.m.Measure
	if ms == nil || d.m.Status != record.StatusComplete {
		return nil
	}
	if want, ok := d.m.Parameters["baseline"].(float64); ok {
		if err := stageLasts(d, record.StageBaseline, want, "parameters.baseline", "the baseline step of joulebench measure waits that long (a baseline cut short lets the formal stage move into it)"); err != nil {
			return err
		}
	}
	if len(ms.Command) == 0 {
		return stageLasts(d, record.StageFormal, ms.DurationS, "measure.duration_s", "joulebench measure --duration waits that long for live traffic (a window cut short gives less energy for the same tokens)")
	}
	return nil
}

// stageLasts: the closed stage name, when present, lasts at least
// 0.99 × want − 0.05 s.
func stageLasts(d *metaDoc, name string, want float64, what, why string) error {
	i := slices.IndexFunc(d.m.Stages, func(s record.Stage) bool { return s.Name == name })
	if i < 0 || d.m.Stages[i].Open {
		return nil
	}
	st := d.m.Stages[i]
	if got := st.End - st.Start; got < 0.99*want-0.05 {
		return d.at(fmt.Sprintf("stage %q lasts %.4f s, shorter than %s %v s: %s", name, got, what, want, why), "stages", i, "end")
	}
	return nil
}
