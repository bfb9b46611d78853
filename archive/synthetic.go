package archive

import (
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
)

// SyntheticRequests spreads n output tokens over the fewest synthetic
// formal requests over [begin, end] that keep each within
// MaxOutputTokens, as evenly as whole tokens allow (the first ones take
// one more). They stand for a load whose requests were not recorded one
// by one (an import's total, a measured window's counter): id names the
// only one, or id-1, id-2, ... when there are several; source is their
// tokens_source.
func SyntheticRequests(n int, begin, end float64, id, source string) []record.Request {
	if n <= 0 {
		return nil
	}
	k := (n + MaxOutputTokens - 1) / MaxOutputTokens
	out := make([]record.Request, k)
	for i := range out {
		rid := id
		if k > 1 {
			rid = fmt.Sprintf("%s-%d", id, i+1)
		}
		tokens := n / k
		if i < n%k {
			tokens++
		}
		out[i] = record.Request{ID: rid, Phase: "formal", SentAt: begin, FirstTokenAt: begin, DoneAt: end,
			OutputTokens: tokens, TokensSource: source, OK: true, Synthetic: true}
	}
	return out
}
