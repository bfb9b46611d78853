package measure

import (
	"fmt"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// SplitPhases sizes its list of spans (two a request at most: prefill and
// decode) once, from the requests in the window, instead of growing it by
// appending (issue 46). Appending, 100,000 requests made 78 allocations
// and 1,000 made 31 (the spans and their kinds grown about 2 × 17 times
// more, by doubling from 1 to 200,000); sized, the difference is what
// the sharing (residentShares) makes as its own lists grow: 13 here.
func TestSplitPhasesSizesSpansOnce(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 200), ps("gpu0", 500, 200), ps("gpu0", 1000, 200)})
	allocs := func(n int) float64 {
		reqs := make([]*record.Request, n)
		for i := range reqs {
			s := 1 + 900*float64(i)/float64(n)
			reqs[i] = &record.Request{ID: fmt.Sprint(i), OK: true, SentAt: s, FirstTokenAt: s + 0.5, DoneAt: s + 5, OutputTokens: 10}
		}
		return testing.AllocsPerRun(2, func() {
			if _, err := pd.SplitPhases(reqs, 0, 1000, "auto"); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(1000), allocs(100000)
	if many > few+16 {
		t.Errorf("SplitPhases made %v allocations for 100,000 requests, %v for 1,000: want about the same", many, few)
	}
}
