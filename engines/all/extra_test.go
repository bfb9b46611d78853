package all_test

import (
	"context"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

type plainDoer struct{ got chan workload.Request }

func (d plainDoer) Do(_ context.Context, r workload.Request) record.Request {
	d.got <- r
	return record.Request{ID: r.ID}
}

type trackingDoer struct {
	plainDoer
	flights chan *loadgen.Flight
}

func (d trackingDoer) DoFlight(ctx context.Context, r workload.Request, f *loadgen.Flight) record.Request {
	d.flights <- f
	return d.Do(ctx, r)
}

// WithExtra keeps a Tracker a Tracker (so the profile's limits reach the
// client) and adds its members either way.
func TestWithExtraKeepsTracker(t *testing.T) {
	extra := map[string]any{"k": 1}
	plain := plainDoer{got: make(chan workload.Request, 1)}
	if _, ok := all.WithExtra(plain, extra).(loadgen.Tracker); ok {
		t.Fatal("a plain Doer became a Tracker")
	}
	tr := trackingDoer{plainDoer: plainDoer{got: make(chan workload.Request, 1)}, flights: make(chan *loadgen.Flight, 1)}
	d, ok := all.WithExtra(tr, extra).(loadgen.Tracker)
	if !ok {
		t.Fatal("a Tracker lost its ability")
	}
	f := &loadgen.Flight{ID: "a"}
	d.DoFlight(context.Background(), workload.Request{ID: "a"}, f)
	if got := <-tr.flights; got != f {
		t.Fatal("flight not passed on")
	}
	if r := <-tr.got; r.Extra["k"] != 1 {
		t.Fatalf("extra members lost: %+v", r.Extra)
	}
}
