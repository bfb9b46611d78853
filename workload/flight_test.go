package workload

import "testing"

func TestFlightCounts(t *testing.T) {
	f := &Flight{ID: "x"}
	f.AddTokens(3)
	f.AddTokens(2)
	f.AddBounded(false)
	f.AddBoundedN(4) // four more, none of them the first
	f.AddBoundedN(0)
	if n, first := f.Bounded(); f.Tokens() != 5 || n != 5 || first {
		t.Fatalf("tokens %d, bounded %d (first %v), want 5, 5 (false)", f.Tokens(), n, first)
	}
	f.AddBounded(true)
	if n, first := f.Bounded(); n != 6 || !first {
		t.Fatalf("bounded %d (first %v), want 6 (true)", n, first)
	}
	var none *Flight // a request without a flight
	none.AddTokens(1)
	none.AddBounded(true)
	none.AddBoundedN(2)
	none.SetFirstWithin(1)
}

func TestFlightWroteOnce(t *testing.T) {
	calls := 0
	f := &Flight{OnWritten: func() { calls++ }}
	f.Wrote()
	f.Wrote()
	if calls != 1 {
		t.Errorf("OnWritten called %d times, want 1", calls)
	}
	(&Flight{}).Wrote() // no listener
	var none *Flight
	none.Wrote()
}
