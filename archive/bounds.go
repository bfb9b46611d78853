package archive

import (
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"math"
	"strconv"
	"strings"
)

// Bounds the reader enforces on every numeric field of an archive, as
// docs/archive-v1.md ("Bounds") states them. A value outside them is an
// error naming the file, the line and the field: an archive that breaks
// them was not written by joulebench (the writer keeps to them), and a
// formula fed such a value would print a plausible-looking wrong figure
// (a negative TTFT, 10^13 tok/s).
const (
	// MaxOutputTokens bounds output_tokens, reasoning_tokens, each
	// token_counts entry and bounded_chunks of one request: the live path
	// refuses a count above it (engines/openai.MaxPlausibleTokens, the
	// same number: no model generates 4 Mi tokens in one answer).
	MaxOutputTokens = 1 << 22
	// MaxPromptTokens bounds prompt_tokens (128 Mi: far above any context
	// length).
	MaxPromptTokens = 1 << 27
	// MaxRequestLimit bounds max_tokens and output_chars (what a 32-bit
	// engine field holds).
	MaxRequestLimit = 1<<31 - 1
	// MaxDistinctChunks is the most distinct_chunks can be (the client
	// counts up to 32).
	MaxDistinctChunks = 32
	// MaxParameters bounds the number of run.json parameters (a profile
	// has a few dozen). It is checked before they are decoded.
	MaxParameters = 1024
	// TimeSlackS is how far a time in the run's files may lie before
	// started_at or after ended_at, in seconds: a remote power source
	// (Prometheus) stamps samples with its own scrape times.
	TimeSlackS = 60
	// firstTokenBoundSlackS absorbs the rounding of first_token_bound_s,
	// which the client keeps as whole nanoseconds.
	firstTokenBoundSlackS = 1e-6
)

// engineTimingsNonNegative are the engine_timings names that Ollama and
// llama.cpp report as counts, durations or rates: never negative.
var engineTimingsNonNegative = map[string]bool{
	"eval_count": true, "eval_duration": true, "prompt_eval_count": true,
	"prompt_eval_duration": true, "load_duration": true, "total_duration": true,
	"predicted_n": true, "predicted_ms": true, "predicted_per_second": true,
	"prompt_n": true, "prompt_ms": true, "prompt_per_second": true,
}

// window is the span every time of a run's files must lie in: [lo, hi],
// lo never below 0 (Unix seconds).
type window struct {
	lo, hi float64
	// what lo and hi come from, for messages
	from, to string
}

// anyTime is the window of a file read on its own, without its run.json:
// any Unix time (≥ 0).
var anyTime = window{lo: 0, hi: math.Inf(1)}

// runWindow is the window of the run m describes: from started_at to
// ended_at (no end while it has none), widened by TimeSlackS.
func runWindow(m *record.Meta) window {
	w := window{lo: max(0, m.StartedAt-TimeSlackS), hi: math.Inf(1)}
	w.from = fmt.Sprintf("more than %d s before run.json's started_at %s", TimeSlackS, ft(m.StartedAt))
	if m.EndedAt != 0 {
		w.hi = m.EndedAt + TimeSlackS
		w.to = fmt.Sprintf("more than %d s after run.json's ended_at %s", TimeSlackS, ft(m.EndedAt))
	}
	return w
}

// check says why t, the value of field, is outside w ("" when inside).
func (w window) check(field string, t float64) string {
	if t >= w.lo && t <= w.hi && t <= math.MaxFloat64 {
		return "" // inside (lo ≥ 0; NaN fails every comparison)
	}
	return w.outside(field, t)
}

// outside says why t, the value of field, is outside w ("" when it is not).
func (w window) outside(field string, t float64) string {
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		return fmt.Sprintf("%s %v is not a finite time", field, t)
	case t < 0:
		return fmt.Sprintf("%s %s is negative; times are Unix seconds", field, ft(t))
	case t < w.lo:
		return fmt.Sprintf("%s %s is before the run (%s)", field, ft(t), w.from)
	case t > w.hi:
		return fmt.Sprintf("%s %s is after the run (%s)", field, ft(t), w.to)
	}
	return ""
}

// ft writes a time in plain decimals, as the files hold it.
func ft(t float64) string {
	return strconv.FormatFloat(t, 'f', -1, 64)
}

// intField says why v, the value of field, is outside [0, hi] ("" when
// inside).
func intField(field string, v, hi int) string {
	switch {
	case v < 0:
		return fmt.Sprintf("%s %d is negative", field, v)
	case v > hi:
		return fmt.Sprintf("%s %d is above %d, the most this format allows", field, v, hi)
	}
	return ""
}

// The rules on a requests.jsonl record (requestRules), each saying why
// request q breaks it ("" when it keeps to it).

// okRequestHasItsTimes: a request with ok=true has sent_at,
// first_token_at and done_at.
func okRequestHasItsTimes(q *record.Request) string {
	if !q.OK {
		return ""
	}
	switch {
	case q.SentAt == 0:
		return fmt.Sprintf("request %q has ok=true but no sent_at", q.ID)
	case q.FirstTokenAt == 0:
		return fmt.Sprintf("request %q has ok=true but no first_token_at (a response with no output is recorded with ok=false)", q.ID)
	case q.DoneAt == 0:
		return fmt.Sprintf("request %q has ok=true but no done_at", q.ID)
	}
	return ""
}

// tokenCountsMatchTokenTimes: token_counts, when present, is as long as
// token_times.
func tokenCountsMatchTokenTimes(q *record.Request) string {
	if q.TokenCounts != nil && len(q.TokenCounts) != q.TokenTimesLen() {
		return fmt.Sprintf("request %q: token_counts has %d entries but token_times has %d; they must match one to one", q.ID, len(q.TokenCounts), q.TokenTimesLen())
	}
	return ""
}

// requestCountsInBounds: each count is in [0, its bound].
func requestCountsInBounds(q *record.Request) string {
	for _, f := range []struct {
		name  string
		v, hi int
	}{
		{"prompt_tokens", q.PromptTokens, MaxPromptTokens},
		{"output_tokens", q.OutputTokens, MaxOutputTokens},
		{"reasoning_tokens", q.ReasoningTokens, MaxOutputTokens},
		{"cached_prompt_tokens", q.CachedPromptTokens, MaxPromptTokens},
		{"turn", q.Turn, MaxRequestLimit},
		{"output_chars", q.OutputChars, MaxRequestLimit},
		{"max_tokens", q.MaxTokens, MaxRequestLimit},
		{"distinct_chunks", q.DistinctChunks, MaxDistinctChunks},
		{"bounded_chunks", q.BoundedChunks, MaxOutputTokens},
	} {
		if msg := intField(f.name, f.v, f.hi); msg != "" {
			return fmt.Sprintf("request %q: %s", q.ID, msg)
		}
	}
	for i, n := range q.TokenCounts {
		if msg := intField(fmt.Sprintf("token_counts[%d]", i), n, MaxOutputTokens); msg != "" {
			return fmt.Sprintf("request %q: %s", q.ID, msg)
		}
	}
	return ""
}

// failedRequestHasNoTokens: a failed request's output_tokens is 0.
func failedRequestHasNoTokens(q *record.Request) string {
	if !q.OK && q.OutputTokens != 0 {
		return fmt.Sprintf("request %q: output_tokens %d in a failed request (ok=false); a failed request's output_tokens is 0, its tokens are never counted", q.ID, q.OutputTokens)
	}
	return ""
}

// tokensWithinEvidence checks a successful request's output_tokens
// against what the request itself shows: never above its max_tokens (the
// live path refuses a server's count above it), nor above what its chunks
// held when token_counts says (the live path writes token_counts only for
// a response that came whole, as [output_tokens]).
func tokensWithinEvidence(q *record.Request) string {
	if !q.OK {
		return ""
	}
	if q.MaxTokens > 0 && q.OutputTokens > q.MaxTokens {
		return fmt.Sprintf("request %q: output_tokens %d is above the request's max_tokens %d; an engine never returns more than it was asked for (the live path refuses such a count)", q.ID, q.OutputTokens, q.MaxTokens)
	}
	if q.TokenCounts == nil {
		return ""
	}
	sum := 0
	for _, n := range q.TokenCounts {
		sum += n
	}
	if q.OutputTokens > sum {
		return fmt.Sprintf("request %q: output_tokens %d is more than its chunks held (token_counts add up to %d)", q.ID, q.OutputTokens, sum)
	}
	return ""
}

// firstTokenBoundNotNegative: first_token_bound_s ≥ 0.
func firstTokenBoundNotNegative(q *record.Request) string {
	if q.FirstTokenBoundS < 0 {
		return fmt.Sprintf("request %q: first_token_bound_s %v is negative", q.ID, q.FirstTokenBoundS)
	}
	return ""
}

// engineTimingsNotNegative: the engine_timings that are counts, durations
// or rates (engineTimingsNonNegative) are ≥ 0.
func engineTimingsNotNegative(q *record.Request) string {
	for k, v := range q.EngineTimings {
		if v < 0 && engineTimingsNonNegative[k] {
			return fmt.Sprintf("request %q: engine_timings.%s %v is negative (a count, duration or rate)", q.ID, k, v)
		}
	}
	return ""
}

// requestTimesInRunInOrder is the rule on the times of a request, in
// the run's window w: each present one (non-zero) in w, and in the order
// they happen: sent_at ≤ first_token_at ≤ each token time (in order) ≤
// done_at.
func requestTimesInRunInOrder(w window) func(*record.Request) string {
	return func(q *record.Request) string {
		if msg := requestTimes(q, w); msg != "" {
			return fmt.Sprintf("request %q: %s", q.ID, msg)
		}
		return ""
	}
}

// requestTimes says why the times of q are not in w, or not in order.
func requestTimes(q *record.Request, w window) string {
	times := []struct {
		name string
		t    float64
	}{{"sent_at", q.SentAt}, {"first_token_at", q.FirstTokenAt}, {"done_at", q.DoneAt}}
	for _, f := range times {
		if f.t == 0 {
			continue // absent
		}
		if msg := w.check(f.name, f.t); msg != "" {
			return msg
		}
	}
	prevName, prev := "", 0.0
	order := func(name string, t float64) string {
		if t == 0 {
			return ""
		}
		if prevName != "" && t < prev {
			return fmt.Sprintf("%s %s is before %s %s (%.6g s earlier); times go sent_at ≤ first_token_at ≤ token_times ≤ done_at", name, ft(t), prevName, ft(prev), prev-t)
		}
		prevName, prev = name, t
		return ""
	}
	if msg := order("sent_at", q.SentAt); msg != "" {
		return msg
	}
	if msg := order("first_token_at", q.FirstTokenAt); msg != "" {
		return msg
	}
	// A request holds about as many token times as tokens (20 million
	// in a 100k-request run): a time that keeps to the bounds is passed
	// without formatting its name; only the last one's is kept.
	last := -1
	for i, t := range q.TokenTimesAll() {
		if t != 0 && t >= w.lo && t <= w.hi && t <= math.MaxFloat64 && ((prevName == "" && last < 0) || t >= prev) {
			prev, last = t, i
			continue
		}
		if last >= 0 {
			prevName, last = fmt.Sprintf("token_times[%d]", last), -1
		}
		name := fmt.Sprintf("token_times[%d]", i)
		if msg := w.check(name, t); msg != "" {
			return msg
		}
		if msg := order(name, t); msg != "" {
			return msg
		}
	}
	if last >= 0 {
		prevName = fmt.Sprintf("token_times[%d]", last)
	}
	if msg := order("done_at", q.DoneAt); msg != "" {
		return msg
	}
	return ""
}

// firstTokenBoundWithinTTFT: first_token_bound_s is at most the time to
// first token (first_token_at − sent_at, +1 µs for its rounding).
func firstTokenBoundWithinTTFT(q *record.Request) string {
	if q.FirstTokenAt != 0 && q.SentAt != 0 && q.FirstTokenBoundS > q.FirstTokenAt-q.SentAt+firstTokenBoundSlackS {
		return fmt.Sprintf("request %q: first_token_bound_s %v is longer than the time to first token (%v s)", q.ID, q.FirstTokenBoundS, q.FirstTokenAt-q.SentAt)
	}
	return ""
}

// countMembers counts the members of the JSON object raw (valid JSON, as
// decoded by the library). It looks at each byte once and allocates
// nothing, so that a huge object is counted before it is decoded.
func countMembers(raw []byte) int {
	depth, n := 0, 0
	inString, escaped, empty := false, false, true
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			continue
		case c == '}' || c == ']':
			depth--
			continue
		case c == ',' && depth == 1:
			n++
		}
		if depth == 1 && !isJSONSpace(c) {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// devicesList writes device ids for a message.
func devicesList(ds []record.Device) string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return strings.Join(ids, ", ")
}
