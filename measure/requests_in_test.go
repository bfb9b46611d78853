package measure

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Three requests against the window [10, 20]:
//
//	a: 100 tokens uniformly over [0, 20] → half of its time, 50 tokens, inside: ½
//	b: 10 tokens over [12, 18], wholly inside: 1
//	c: 40 tokens in chunks (below): ⅓
//	d: failed: 0
//
// c's first token is at 5 and its last at 25; its chunks at 5, 9, 15, 25
// carry 10 tokens each. Attribution makes segments from the first token:
// [5,9] with the chunk at 9 (the chunk at 5 has no time since the start, so
// it is carried): 20 tokens; [9,15]: 10; [15,25]: 10. In [10, 20]: of
// [9,15], 5/6 × 10 = 8.333…; of [15,25], 5/10 × 10 = 5 → 13.333…/40 = 1/3.
// Total ½ + 1 + ⅓ = 11/6.
func TestRequestsIn(t *testing.T) {
	reqs := []*record.Request{
		{ID: "a", OK: true, FirstTokenAt: 0, DoneAt: 20, OutputTokens: 100},
		{ID: "b", OK: true, FirstTokenAt: 12, DoneAt: 18, OutputTokens: 10},
		{ID: "c", OK: true, FirstTokenAt: 5, DoneAt: 25, OutputTokens: 40, TokenTimes: []float64{5, 9, 15, 25}, TokenCounts: []int{10, 10, 10, 10}},
		{ID: "d", OK: false, FirstTokenAt: 10, DoneAt: 20, OutputTokens: 50},
	}
	got, err := RequestsIn(reqs, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	if want := 11.0 / 6; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("RequestsIn = %v, want 11/6 = %v", got, want)
	}
	if _, err := RequestsIn(reqs, 20, 10); err == nil {
		t.Error("reversed interval: no error")
	}
}
