package metricdefs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// bigRequests is a run of n successful formal requests (one record shared
// by every entry: the formulas read them, never change them).
func bigRequests(t *testing.T, n int) *Data {
	t.Helper()
	r := &record.Request{ID: "r", Phase: "formal", OK: true, OutputTokens: 3}
	reqs := make([]*record.Request, n)
	for i := range reqs {
		reqs[i] = r
	}
	d, err := NewData(&record.Run{Meta: record.Meta{RunID: "big"}})
	if err != nil {
		t.Fatal(err)
	}
	d.Requests = reqs
	return d
}

// expr's memory budget (a count of list elements a formula allocates,
// 1e6 by default) would stop the profiles' first filter over a run of a
// million requests: the budget scales with the run, so a formula that
// makes a few lists as long as the requests runs (issue 46).
func TestMemoryBudgetScalesWithRun(t *testing.T) {
	const n = 1_100_000
	res, err := evalDefs(t, bigRequests(t, n),
		Def{Name: "ok_formal", Kind: KindDerived, Expr: `filter(requests, .phase == "formal" && .ok)`},
		// 3 tokens each: 3,300,000.
		Def{Name: "tokens", Kind: KindMetric, Expr: `sum(map(ok_formal, .output_tokens))`},
		Def{Name: "sorted", Kind: KindMetric, Expr: `len(sortBy(map(ok_formal, .output_tokens), #))`},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Values["tokens"].Value; fmt.Sprint(got) != "3300000" {
		t.Errorf("tokens = %v (%s), want 3300000", got, res.Values["tokens"].Note)
	}
	if got := res.Values["sorted"].Value; fmt.Sprint(got) != fmt.Sprint(n) {
		t.Errorf("sorted = %v (%s), want %d", got, res.Values["sorted"].Note, n)
	}
}

// The budget still stops a formula that allocates far more than the run
// holds, and the error names the formula, the budget and what to change.
func TestMemoryBudgetHitNamesFormula(t *testing.T) {
	d := bigRequests(t, 10)
	_, err := evalDefs(t, d,
		Def{Name: "huge", Kind: KindMetric, Expr: `len(map(1..100000000, #))`},
	)
	if err == nil {
		t.Fatal("a list of 1e8 values over a run of 10 requests: no error")
	}
	for _, want := range []string{"metric huge", "memory budget", "1000000", "requests"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
