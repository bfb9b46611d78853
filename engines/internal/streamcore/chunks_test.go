package streamcore

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// SettleCounts marks a successful stream whose server count equals its
// chunks single_token_chunks (docs/archive-v1.md): each chunk held one
// token, and the archive reader holds the count to the chunks. It marks
// no other: a count above the chunks (several tokens in a chunk), an
// estimate, a response with token_counts (one not streamed), a stream
// without token times, a failed request.
func TestSettleCountsMarksSingleTokenChunks(t *testing.T) {
	times := []float64{1, 2, 3}
	for _, c := range []struct {
		name string
		rec  record.Request
		want bool
	}{
		{"usage equal to the chunks", record.Request{OK: true, OutputTokens: 3, TokensSource: SourceUsage, TokenTimes: times, OutputChars: 12}, true},
		{"engine count equal to the chunks", record.Request{OK: true, OutputTokens: 3, TokensSource: SourceEngine, TokenTimes: times, OutputChars: 12}, true},
		{"several tokens in a chunk", record.Request{OK: true, OutputTokens: 5, TokensSource: SourceUsage, TokenTimes: times, OutputChars: 12}, false},
		{"an estimate", record.Request{OK: true, OutputTokens: 3, TokensSource: SourceEstimate, TokenTimes: times, OutputChars: 12}, false},
		{"not streamed", record.Request{OK: true, OutputTokens: 1, TokensSource: SourceUsage, TokenTimes: times[:1], TokenCounts: []int{1}, OutputChars: 4}, false},
		{"no token times", record.Request{OK: true, OutputTokens: 3, TokensSource: SourceUsage, OutputChars: 12}, false},
		{"failed", record.Request{OutputTokens: 3, TokensSource: SourceUsage, TokenTimes: times, OutputChars: 12}, false},
		{"failed here: above max_tokens", record.Request{OK: true, OutputTokens: 3, MaxTokens: 2, TokensSource: SourceUsage, TokenTimes: times, OutputChars: 12}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := c.rec
			SettleCounts(&rec)
			if rec.SingleTokenChunks != c.want {
				t.Errorf("single_token_chunks %v, want %v (%+v)", rec.SingleTokenChunks, c.want, rec)
			}
		})
	}
}
