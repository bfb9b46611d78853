package runner

import (
	"context"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

type captureDoer struct{ got workload.Request }

func (c *captureDoer) Do(_ context.Context, r workload.Request) record.Request {
	c.got = r
	return record.Request{ID: r.ID, OK: true}
}

// --extra-body members reach every request; a request's own member wins.
func TestExtraBodyDoer(t *testing.T) {
	next := &captureDoer{}
	d := extraBodyDoer{next: next, extra: map[string]any{"think": false, "top_k": 1.0}}
	d.Do(context.Background(), workload.Request{ID: "r1", Extra: map[string]any{"top_k": 5.0}})
	if next.got.Extra["think"] != false || next.got.Extra["top_k"] != 5.0 {
		t.Errorf("extra = %v, want think=false and the request's own top_k=5", next.got.Extra)
	}
}
