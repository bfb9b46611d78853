package measure

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// shapeOf of a request whose token times are in order (as a client records
// them) copies nothing: evaluation of a long run must not allocate in
// proportion to its token times. Allowed: the grouped segments (and no
// one-segment slice of the uniform shape beside them).
func TestShapeOfInOrderDoesNotCopy(t *testing.T) {
	r := &record.Request{ID: "r", OK: true, FirstTokenAt: 10, DoneAt: 14, OutputTokens: 200}
	for k := range 200 {
		r.TokenTimes = append(r.TokenTimes, 10+float64(k)*0.02)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := shapeOf(r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("shapeOf allocates %v times per call, want at most 1", allocs)
	}
}
