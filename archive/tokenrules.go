package archive

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/joulebench/joulebench/archive/record"
)

// The rules on a request's output tokens and its evidence
// (docs/archive-v1.md, requests.jsonl, "Evidence of output tokens", and
// "Bounds"). A request's output_tokens is the figure every J/token
// divides by; it is held to what the request itself shows, and an
// imported run's synthetic requests to what the import recorded.

const (
	// maxTokensPerChar bounds the output tokens one character of text
	// holds: a token is at least one byte of the text (byte-level BPE,
	// SentencePiece's byte fallback), and a character at most four bytes
	// of UTF-8.
	maxTokensPerChar = 4
	// hiddenTokensSlack is how many output tokens a response may hold
	// that show no text at all: the end-of-sequence token, and the chat
	// template's and reasoning parser's special tokens (<think>,
	// </think>, a channel's markers), a handful in any response.
	hiddenTokensSlack = 64
	// charsPerEstimatedToken is the writer's estimate of output tokens
	// when the server reported none: max(1, output_chars/4)
	// (engines/internal/streamcore.Estimate).
	charsPerEstimatedToken = 4
	// sourceEstimate is the tokens_source of the writer's estimate from
	// the characters.
	sourceEstimate = "estimate"

	// maxTokensPerSecond bounds how fast one request's output tokens
	// arrive, from sent_at to done_at: above any engine's decoding of one
	// sequence (the fastest published are about 3,000 tokens/s).
	maxTokensPerSecond = 10_000
)

// textTokenBound is the most output tokens a response of chars characters
// can hold: maxTokensPerChar a character, and hiddenTokensSlack that show
// no text.
func textTokenBound(chars int) int {
	return maxTokensPerChar*chars + hiddenTokensSlack
}

// MaxTokensPerSecond and HiddenTokensSlack are the reader's bound on how
// fast one request's output tokens arrive (MaxOutputTokensIn), for a
// writer's messages.
const (
	MaxTokensPerSecond = maxTokensPerSecond
	HiddenTokensSlack  = hiddenTokensSlack
)

// MaxOutputTokensIn is the most output tokens a request that took s
// seconds from sent_at to done_at can have received (docs/archive-v1.md,
// "Evidence of output tokens"): a writer holds a server's count to it, so
// that a run never writes a request its reader refuses.
func MaxOutputTokensIn(s float64) float64 { return timeTokenBound(s) }

// timeTokenBound is the most output tokens a request that took s seconds
// from sent_at to done_at can have received: maxTokensPerSecond, and
// hiddenTokensSlack at once.
func timeTokenBound(s float64) float64 {
	return maxTokensPerSecond*max(0, s) + hiddenTokensSlack
}

// outputTokensWithinEvidence: a successful request has no more output
// tokens than arrive in its time, timeTokenBound(done_at − sent_at),
// whatever its max_tokens and text: sent_at and done_at are the one
// evidence every successful request carries. Without max_tokens (its
// limit, the bound tokensWithinEvidence holds it to) it has no more than
// its text holds either, textTokenBound(output_chars), when it records
// text (joulebench's writer records the characters of every response with
// output). With max_tokens set, the limit bounds it, not the text: an
// engine told to ignore the end of sequence may go on generating tokens
// that show no text (special tokens the detokenizer skips) up to the
// limit. Synthetic requests carry no text and no time of their own; their
// tokens are the import's (requestsMatchImport).
func outputTokensWithinEvidence(q *record.Request) string {
	if !q.OK || q.Synthetic {
		return ""
	}
	if q.MaxTokens == 0 && q.OutputChars > 0 {
		if hi := textTokenBound(q.OutputChars); q.OutputTokens > hi {
			return fmt.Sprintf("request %q: output_tokens %d has no evidence: the request has no max_tokens, and its %d characters of text (output_chars) hold at most %d tokens (%d a character, %d that show no text)",
				q.ID, q.OutputTokens, q.OutputChars, hi, maxTokensPerChar, hiddenTokensSlack)
		}
	}
	s := q.DoneAt - q.SentAt
	if float64(q.OutputTokens) <= timeTokenBound(s) {
		return ""
	}
	what, limit := "in its", ""
	switch {
	case q.MaxTokens > 0:
		limit = fmt.Sprintf(", whatever its max_tokens (%d)", q.MaxTokens)
	case q.OutputChars == 0:
		what = "the request has no max_tokens and no output_chars, and in its"
	}
	return fmt.Sprintf("request %q: output_tokens %d has no evidence: %s %.6g s from sent_at to done_at at most %.0f tokens arrive (%d a second, above any engine's decoding of one request, and %d at once)%s",
		q.ID, q.OutputTokens, what, s, math.Floor(timeTokenBound(s)), maxTokensPerSecond, hiddenTokensSlack, limit)
}

// estimateWithinItsText: output_tokens the writer estimated (tokens_source
// estimate) is at most max(1, output_chars/4), the estimate of its text
// (capped at max_tokens by the writer, so never above it either).
func estimateWithinItsText(q *record.Request) string {
	if !q.OK || q.TokensSource != sourceEstimate {
		return ""
	}
	if est := max(1, q.OutputChars/charsPerEstimatedToken); q.OutputTokens > est {
		return fmt.Sprintf("request %q: output_tokens %d is above the estimate of its text: tokens_source estimate is max(1, output_chars/%d) = %d for %d characters",
			q.ID, q.OutputTokens, charsPerEstimatedToken, est, q.OutputChars)
	}
	return ""
}

// singleTokenChunksMatch: a request marked single_token_chunks (the
// writer found the server's count equal to the chunks it streamed) is a
// successful one with output_tokens equal to its chunks, len(token_times),
// and no token_counts: each chunk held one token. A count raised above
// the chunks is refused here; without the mark, a chunk may hold several
// tokens and only max_tokens bounds the count.
func singleTokenChunksMatch(q *record.Request) string {
	if !q.SingleTokenChunks {
		return ""
	}
	switch {
	case !q.OK || q.TokenCounts != nil:
		return fmt.Sprintf("request %q: single_token_chunks on a request that failed or has token_counts; the writer marks only a successful stream whose server count equals its chunks", q.ID)
	case q.OutputTokens != q.TokenTimesLen():
		return fmt.Sprintf("request %q: output_tokens %d but its %d chunks (token_times) held one token each (single_token_chunks: the server's count equalled the chunks)",
			q.ID, q.OutputTokens, q.TokenTimesLen())
	}
	return ""
}

// requestsMatchImport holds the requests to where run.json says they came
// from, in one pass over requests.jsonl: a run with an import object
// (joulebench import) holds only synthetic requests, each standing for
// the formal window (sent_at = first_token_at = its start, done_at = its
// end), whose output_tokens add up to import.output_tokens exactly; a run
// of joulebench measure without per-request data (a measure object) holds
// the same, adding up to measure.output_tokens (the server's counter); a
// run without either (joulebench measured its own requests) holds no
// synthetic request, and is not of an imported engine kind.
func requestsMatchImport(d *decodedRun) error {
	m := d.meta.m
	if m.Import == nil {
		if m.Engine.Kind == importedKind || m.Engine.Kind == importedRangingKind {
			return d.meta.at(fmt.Sprintf("engine.kind %q is an imported run's, but run.json has no import object saying where it came from", m.Engine.Kind), "engine", "kind")
		}
		if m.Measure != nil && (hasSynthetic(d) || len(d.requests.rows) == 0 && m.Measure.OutputTokens > 0) {
			return syntheticTokensMatch(d, m.Measure.OutputTokens, "measure", "a measured run's synthetic requests carry exactly the tokens the server's counter gave")
		}
		return measuredRequestsNotSynthetic(d)
	}
	return syntheticTokensMatch(d, m.Import.OutputTokens, "import", "an import's requests carry exactly the tokens it recorded")
}

// hasSynthetic reports whether requests.jsonl holds a synthetic request.
func hasSynthetic(d *decodedRun) bool {
	for i := range d.requests.rows {
		if d.requests.rows[i].Synthetic {
			return true
		}
	}
	return false
}

// syntheticTokensMatch: every request is synthetic and stands for the
// formal window, and their output_tokens add up to want, run.json's
// obj.output_tokens.
func syntheticTokensMatch(d *decodedRun, want int, obj, why string) error {
	formal, hasFormal := d.meta.m.StageByName("formal")
	sum := 0
	for i := range d.requests.rows {
		q := &d.requests.rows[i]
		if msg := importedRequest(q, formal, hasFormal); msg != "" {
			return d.requestErr(i, msg)
		}
		sum += q.OutputTokens // each ≤ MaxOutputTokens: no overflow below 2^41 lines
		if sum > want {
			return d.requestErr(i, fmt.Sprintf("request %q: output_tokens: the synthetic requests' output_tokens add up to %d by this line, above run.json's %s.output_tokens %d; %s",
				q.ID, sum, obj, want, why))
		}
	}
	if sum != want {
		return d.meta.at(fmt.Sprintf("%s.output_tokens is %d but the synthetic requests of %s carry %d; %s (lines deleted, or tokens edited?)",
			obj, want, filepath.Join(d.dir, RequestsFile), sum, why), obj, "output_tokens")
	}
	return nil
}

// Engine kinds of an imported run (importer.EngineKind and
// importer.EngineKindRanging; the importer's tests hold them equal).
const (
	importedKind        = "imported"
	importedRangingKind = "imported-ranging"
)

// importedRequest says why q cannot be a request of an imported run
// ("" when it can): it is synthetic, successful, of the formal phase, and
// its times are the formal window's.
func importedRequest(q *record.Request, formal record.Stage, hasFormal bool) string {
	switch {
	case !q.Synthetic:
		return fmt.Sprintf("request %q: synthetic is false in an imported run (run.json has an import object): an imported recording has no request of its own, its requests are synthetic and stand for the formal window, so no latency is measured from them", q.ID)
	case !q.OK || q.Phase != "formal":
		return fmt.Sprintf("request %q: an imported run's synthetic request is a successful formal one (ok %v, phase %q)", q.ID, q.OK, q.Phase)
	case !hasFormal:
		return fmt.Sprintf("request %q: synthetic request in an imported run without a formal stage", q.ID)
	case q.SentAt != formal.Start || q.FirstTokenAt != formal.Start || q.DoneAt != formal.End:
		return fmt.Sprintf("request %q: sent_at %s, first_token_at %s, done_at %s: a synthetic request stands for the formal window, sent_at = first_token_at = %s and done_at = %s (run.json's formal stage)",
			q.ID, ft(q.SentAt), ft(q.FirstTokenAt), ft(q.DoneAt), ft(formal.Start), ft(formal.End))
	case q.TokenTimesLen() > 0 || len(q.TokenCounts) > 0:
		return fmt.Sprintf("request %q: a synthetic request has no token_times or token_counts (it was not sent)", q.ID)
	}
	return ""
}

// measuredRequestsNotSynthetic: a run joulebench measured holds no
// synthetic request (only an import makes them); one would be left out
// of every latency figure.
func measuredRequestsNotSynthetic(d *decodedRun) error {
	for i := range d.requests.rows {
		if q := &d.requests.rows[i]; q.Synthetic {
			return d.requestErr(i, fmt.Sprintf("request %q: synthetic is true in a run joulebench measured (run.json has no import object); only an imported recording has synthetic requests", q.ID))
		}
	}
	return nil
}

// requestErr is the error msg at request i's line of requests.jsonl.
func (d *decodedRun) requestErr(i int, msg string) error {
	return &LineError{File: d.requests.name, Line: d.requests.line(i), Msg: msg}
}
