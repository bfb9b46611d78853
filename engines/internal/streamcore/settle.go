package streamcore

import (
	"fmt"
	"math"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// Tokens sources, as record.Request.TokensSource.
const (
	SourceUsage    = "usage"
	SourceEngine   = "engine"
	SourceEstimate = "estimate"
)

// Estimate is the output tokens of a response that reported none: one per
// four characters of text, at least one (the asiai M4 fallback).
func Estimate(chars int) int { return max(1, chars/4) }

// ClampInt converts a count to int, saturating instead of overflowing (an
// absurd count stays absurd and is caught by SettleCounts).
func ClampInt(f float64) int {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt
	case f <= math.MinInt64:
		return math.MinInt
	}
	return int(f)
}

// MaxPlausibleTokens bounds the output tokens of one response: a count
// above it (no model generates 4 Mi tokens in one answer) is a broken
// counter, never tokens.
const MaxPlausibleTokens = 1 << 22

// MaxPlausiblePromptTokens bounds the prompt (and cached prompt) tokens of
// one request: the archive reader's bound (archive.MaxPromptTokens, far
// above any context length), so that a run never writes a request its own
// reader refuses.
const MaxPlausiblePromptTokens = archive.MaxPromptTokens

// SettleCounts checks the token counts of a finished record and makes a
// failed record carry no output tokens. A successful record whose counts
// cannot be right fails with the reason: a negative count, a count the
// engine reported (source usage or engine) above the request's max_tokens,
// or above MaxPlausibleTokens, any count above what arrives in the
// request's time (archive.MaxOutputTokensIn, the archive reader's bound), or prompt tokens above
// MaxPlausiblePromptTokens. An estimate (chars/4) is only an estimate:
// it is capped at max_tokens instead. A failed record keeps what arrived
// (output_chars, token_times) but its output and reasoning tokens are 0,
// so that no consumer can count them, and a prompt count outside the
// bounds is 0 (the error says what the server reported). A successful
// stream whose server count equals its chunks is marked
// SingleTokenChunks.
func SettleCounts(rec *record.Request) {
	if rec.OK {
		if rec.TokensSource == SourceEstimate && rec.MaxTokens > 0 {
			rec.OutputTokens = min(rec.OutputTokens, rec.MaxTokens)
		}
		if why := implausible(rec); why != "" {
			rec.OK = false
			rec.Error = "implausible token count from the server: " + why
		}
	}
	if rec.PromptTokens < 0 || rec.PromptTokens > MaxPlausiblePromptTokens {
		rec.PromptTokens = 0
	}
	if rec.CachedPromptTokens < 0 || rec.CachedPromptTokens > MaxPlausiblePromptTokens {
		rec.CachedPromptTokens = 0
	}
	// A negative count, duration or rate is no reading (the request
	// failed above when it was its token count); the archive holds none.
	for k, v := range rec.EngineTimings {
		if v < 0 && nonNegativeTimings[k] {
			delete(rec.EngineTimings, k)
		}
	}
	if !rec.OK {
		rec.OutputTokens, rec.ReasoningTokens, rec.TokensSource = 0, 0, ""
		rec.TokenCounts = nil
	}
	// The server's count equal to the chunks streamed: each held one
	// token, which the archive says (single_token_chunks) so that its
	// reader holds the count to the chunks (docs/archive-v1.md).
	rec.SingleTokenChunks = rec.OK && rec.TokensSource != SourceEstimate && rec.TokenCounts == nil &&
		len(rec.TokenTimes) > 0 && rec.OutputTokens == len(rec.TokenTimes)
}

// nonNegativeTimings are the engine_timings that Ollama and llama.cpp
// report as counts, durations or rates, which the archive holds to ≥ 0
// (docs/archive-v1.md, "Bounds").
var nonNegativeTimings = map[string]bool{
	"eval_count": true, "eval_duration": true, "prompt_eval_count": true,
	"prompt_eval_duration": true, "load_duration": true, "total_duration": true,
	"predicted_n": true, "predicted_ms": true, "predicted_per_second": true,
	"prompt_n": true, "prompt_ms": true, "prompt_per_second": true,
}

func implausible(rec *record.Request) string {
	src := rec.TokensSource
	switch {
	case rec.OutputTokens < 0:
		return fmt.Sprintf("output tokens %d (%s) is negative", rec.OutputTokens, src)
	case rec.OutputTokens == 0 && rec.OutputChars > 0:
		// Every chunk of text is at least one token: a count of 0 says
		// the stream did not happen.
		return fmt.Sprintf("output tokens 0 (%s) but the stream carried %d characters of text", src, rec.OutputChars)
	case rec.PromptTokens < 0:
		return fmt.Sprintf("prompt tokens %d (%s) is negative", rec.PromptTokens, src)
	case rec.ReasoningTokens < 0:
		return fmt.Sprintf("reasoning tokens %d (%s) is negative", rec.ReasoningTokens, src)
	case rec.PromptTokens > MaxPlausiblePromptTokens:
		return fmt.Sprintf("prompt tokens %d (%s) is above %d", rec.PromptTokens, src, MaxPlausiblePromptTokens)
	case rec.CachedPromptTokens < 0:
		return fmt.Sprintf("cached prompt tokens %d (%s) is negative", rec.CachedPromptTokens, src)
	case rec.CachedPromptTokens > MaxPlausiblePromptTokens:
		return fmt.Sprintf("cached prompt tokens %d (%s) is above %d", rec.CachedPromptTokens, src, MaxPlausiblePromptTokens)
	case rec.OutputTokens > MaxPlausibleTokens:
		return fmt.Sprintf("output tokens %d (%s) is above %d", rec.OutputTokens, src, MaxPlausibleTokens)
	case rec.MaxTokens > 0 && rec.OutputTokens > rec.MaxTokens:
		return fmt.Sprintf("output tokens %d (%s) is above max_tokens %d", rec.OutputTokens, src, rec.MaxTokens)
	case float64(rec.OutputTokens) > archive.MaxOutputTokensIn(rec.DoneAt-rec.SentAt):
		s := rec.DoneAt - rec.SentAt
		return fmt.Sprintf("output tokens %d (%s) in %.6g s from sending to the end, above the %.0f that arrive at %d a second (+ %d at once)",
			rec.OutputTokens, src, s, math.Floor(archive.MaxOutputTokensIn(s)), archive.MaxTokensPerSecond, archive.HiddenTokensSlack)
	}
	return ""
}
