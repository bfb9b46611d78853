package streamcore

import (
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestEstimateAndClampInt(t *testing.T) {
	for _, c := range []struct{ chars, want int }{
		{0, 1}, {3, 1}, {4, 1}, {7, 1}, {8, 2}, {401, 100}, // chars/4, at least 1
	} {
		if got := Estimate(c.chars); got != c.want {
			t.Errorf("Estimate(%d) = %d, want %d", c.chars, got, c.want)
		}
	}
	for _, c := range []struct {
		f    float64
		want int
	}{
		{0, 0}, {12.9, 12}, {-3.5, -3},
		{1e300, math.MaxInt}, {math.Inf(1), math.MaxInt}, {math.MaxInt64, math.MaxInt},
		{-1e300, math.MinInt}, {math.Inf(-1), math.MinInt},
	} {
		if got := ClampInt(c.f); got != c.want {
			t.Errorf("ClampInt(%g) = %d, want %d", c.f, got, c.want)
		}
	}
}

// TestSettleCounts: every rule of SettleCounts, one record each. ok and
// the error say whether the record stands; out, reasoning and prompt are
// the counts it keeps.
func TestSettleCounts(t *testing.T) {
	const huge = MaxPlausiblePromptTokens + 1
	cases := []struct {
		name string
		rec  record.Request
		// want
		ok                           bool
		errHas                       string
		out, reasoning, prompt, cach int
		source                       string
	}{
		{name: "plausible usage stands",
			rec: record.Request{OK: true, SentAt: 10, DoneAt: 11, TokensSource: SourceUsage, OutputTokens: 100, ReasoningTokens: 20, PromptTokens: 50, CachedPromptTokens: 10, MaxTokens: 128, OutputChars: 400},
			ok:  true, out: 100, reasoning: 20, prompt: 50, cach: 10, source: SourceUsage},
		{name: "estimate capped at max_tokens",
			rec: record.Request{OK: true, SentAt: 10, DoneAt: 11, TokensSource: SourceEstimate, OutputTokens: 300, MaxTokens: 128, OutputChars: 1200},
			ok:  true, out: 128, source: SourceEstimate},
		{name: "estimate without max_tokens kept",
			rec: record.Request{OK: true, SentAt: 10, DoneAt: 11, TokensSource: SourceEstimate, OutputTokens: 300, OutputChars: 1200},
			ok:  true, out: 300, source: SourceEstimate},
		{name: "usage above max_tokens fails",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 129, MaxTokens: 128, OutputChars: 500},
			errHas: "output tokens 129 (usage) is above max_tokens 128"},
		{name: "negative output",
			rec:    record.Request{OK: true, TokensSource: SourceEngine, OutputTokens: -1},
			errHas: "output tokens -1 (engine) is negative"},
		{name: "zero tokens but text",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputChars: 12},
			errHas: "output tokens 0 (usage) but the stream carried 12 characters of text"},
		{name: "negative prompt, zeroed",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 5, OutputChars: 20, PromptTokens: -7},
			errHas: "prompt tokens -7 (usage) is negative"},
		{name: "negative reasoning",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 5, OutputChars: 20, ReasoningTokens: -2},
			errHas: "reasoning tokens -2 (usage) is negative"},
		{name: "prompt above the bound, zeroed",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 5, OutputChars: 20, PromptTokens: huge},
			errHas: "is above"},
		{name: "negative cached prompt, zeroed",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 5, OutputChars: 20, PromptTokens: 9, CachedPromptTokens: -1},
			errHas: "cached prompt tokens -1 (usage) is negative", prompt: 9},
		{name: "cached prompt above the bound, zeroed",
			rec:    record.Request{OK: true, TokensSource: SourceUsage, OutputTokens: 5, OutputChars: 20, PromptTokens: 9, CachedPromptTokens: huge},
			errHas: "cached prompt tokens", prompt: 9},
		{name: "output above the plausible bound",
			rec:    record.Request{OK: true, TokensSource: SourceEngine, OutputTokens: MaxPlausibleTokens + 1, OutputChars: 20},
			errHas: "output tokens 4194305 (engine) is above 4194304"},
		// More tokens than arrive in the request's time, whatever its
		// max_tokens: 10,000 a second + 64 (the archive reader's bound,
		// so that a run never writes a request its reader refuses): in
		// 0.5 s at most 10,000 × 0.5 + 64 = 5064.
		{name: "output within its time",
			rec: record.Request{OK: true, SentAt: 10, DoneAt: 10.5, TokensSource: SourceUsage, OutputTokens: 5064, MaxTokens: 1 << 20, OutputChars: 20000},
			ok:  true, out: 5064, source: SourceUsage},
		{name: "output above what arrives in its time",
			rec:    record.Request{OK: true, SentAt: 10, DoneAt: 10.5, TokensSource: SourceUsage, OutputTokens: 5065, MaxTokens: 1 << 20, OutputChars: 20000},
			errHas: "output tokens 5065 (usage) in 0.5 s from sending to the end, above the 5064 that arrive at 10000 a second (+ 64 at once)"},
		{name: "a failed record keeps no output tokens",
			rec:    record.Request{OK: false, Error: "stall timeout", TokensSource: SourceUsage, OutputTokens: 40, ReasoningTokens: 3, PromptTokens: 12, OutputChars: 160, TokenCounts: []int{1, 1}},
			prompt: 12, errHas: "stall timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := c.rec
			SettleCounts(&rec)
			if rec.OK != c.ok || (c.errHas != "" && !strings.Contains(rec.Error, c.errHas)) || (c.errHas == "" && rec.Error != "") {
				t.Errorf("ok %v, error %q; want ok %v, error with %q", rec.OK, rec.Error, c.ok, c.errHas)
			}
			if rec.OutputTokens != c.out || rec.ReasoningTokens != c.reasoning || rec.PromptTokens != c.prompt || rec.CachedPromptTokens != c.cach || rec.TokensSource != c.source {
				t.Errorf("out %d, reasoning %d, prompt %d, cached %d, source %q; want %d, %d, %d, %d, %q",
					rec.OutputTokens, rec.ReasoningTokens, rec.PromptTokens, rec.CachedPromptTokens, rec.TokensSource,
					c.out, c.reasoning, c.prompt, c.cach, c.source)
			}
			if !rec.OK && rec.TokenCounts != nil {
				t.Errorf("a failed record keeps token counts %v", rec.TokenCounts)
			}
			if rec.OutputChars != c.rec.OutputChars {
				t.Errorf("output chars %d, want %d kept", rec.OutputChars, c.rec.OutputChars)
			}
		})
	}
}

// TestSettleCountsDropsNegativeTimings: a negative count, duration or rate
// among engine_timings is no reading; other timings, and non-negative
// ones, stay.
func TestSettleCountsDropsNegativeTimings(t *testing.T) {
	rec := record.Request{OK: true, TokensSource: SourceEngine, OutputTokens: 3, OutputChars: 12,
		EngineTimings: map[string]float64{"eval_count": -1, "predicted_ms": 12.5, "prompt_per_second": -3, "clock_skew": -2}}
	SettleCounts(&rec)
	want := map[string]float64{"predicted_ms": 12.5, "clock_skew": -2}
	if len(rec.EngineTimings) != len(want) {
		t.Fatalf("timings %v, want %v", rec.EngineTimings, want)
	}
	for k, v := range want {
		if rec.EngineTimings[k] != v {
			t.Errorf("timing %s = %v, want %v", k, rec.EngineTimings[k], v)
		}
	}
	if !rec.OK {
		t.Errorf("a negative timing failed the record: %s", rec.Error)
	}
}
