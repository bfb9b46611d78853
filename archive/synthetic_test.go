package archive

import "testing"

// Tokens over MaxOutputTokens are spread over the fewest requests that
// keep each within it, the first ones one more: 2·M + 1 tokens need 3
// requests (2 would hold 2·M), of (2M+1)/3 each with the remainder on the
// first ones.
func TestSyntheticRequests(t *testing.T) {
	m := MaxOutputTokens
	if got := SyntheticRequests(0, 1, 2, "x", "user"); got != nil {
		t.Errorf("0 tokens: %+v", got)
	}
	one := SyntheticRequests(5, 1, 2, "x", "engine")
	if len(one) != 1 || one[0].ID != "x" || one[0].OutputTokens != 5 || one[0].TokensSource != "engine" ||
		one[0].SentAt != 1 || one[0].DoneAt != 2 || !one[0].Synthetic || !one[0].OK || one[0].Phase != "formal" {
		t.Errorf("5 tokens: %+v", one)
	}
	n := 2*m + 1
	got := SyntheticRequests(n, 1, 2, "x", "user")
	if len(got) != 3 {
		t.Fatalf("%d tokens: %d requests, want 3", n, len(got))
	}
	sum := 0
	for i, r := range got {
		want := n / 3
		if i < n%3 {
			want++
		}
		if r.OutputTokens != want || r.OutputTokens > m || r.ID != []string{"x-1", "x-2", "x-3"}[i] {
			t.Errorf("request %d: %+v, want %d tokens", i, r, want)
		}
		sum += r.OutputTokens
	}
	if sum != n {
		t.Errorf("sum %d, want %d", sum, n)
	}
}
