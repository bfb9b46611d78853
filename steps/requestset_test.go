package steps

import (
	"math"
	"testing"
)

// The requests a step sends, by hand: prompts × repeat, capped by
// max_requests, saturating where the product would overflow (the memory
// check then refuses it instead of seeing a negative count).
func TestRequestsSent(t *testing.T) {
	for _, tc := range []struct {
		prompts, repeat, maxRequests, want int
	}{
		{10, 1, 0, 10},
		{10, 3, 0, 30},
		{10, 3, 25, 25},
		{10, 3, 100, 30},
		{1, 20_000, 0, 20_000},
		{1 << 40, 1 << 40, 0, math.MaxInt},
		{1 << 40, 1 << 40, 7, 7},
	} {
		c := &RequestsConfig{Repeat: tc.repeat, MaxRequests: tc.maxRequests}
		if got := requestsSent(c, tc.prompts); got != tc.want {
			t.Errorf("%d prompts × repeat %d, max %d: %d, want %d", tc.prompts, tc.repeat, tc.maxRequests, got, tc.want)
		}
	}
}
