package measure

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Shapes keeps the shapes of the last list asked for: SteadyState and
// RequestsIn on the same requests (another slice with the same elements)
// compute them once, with the results and errors they give without it; a
// different list computes its own.
func TestShapesKept(t *testing.T) {
	pd := benchPowerT(t)
	_, uniform, chunked := benchData()
	reqs := chunked[:5000]
	sp := SteadyParams{Window: 100, CVMax: 0.5, MinWindows: 2, Method: "counter"}
	want, err := pd.SteadyState(reqs, sp)
	if err != nil {
		t.Fatal(err)
	}
	if !want.Reached {
		t.Fatalf("steady state not reached: %s", want.Reason)
	}
	wantIn, err := RequestsIn(reqs, want.Start, want.End)
	if err != nil {
		t.Fatal(err)
	}
	var s Shapes
	sp.Shapes = &s
	got, err := pd.SteadyState(reqs, sp)
	if err != nil || got.JPerToken != want.JPerToken || got.Tokens != want.Tokens || got.StartIndex != want.StartIndex {
		t.Fatalf("with Shapes: %+v, %v; without: %+v", got, err, want)
	}
	kept := s.list
	gotIn, err := s.RequestsIn(append([]*record.Request(nil), reqs...), want.Start, want.End)
	if err != nil || math.Float64bits(gotIn) != math.Float64bits(wantIn) {
		t.Errorf("RequestsIn with Shapes = %v, %v; without %v", gotIn, err, wantIn)
	}
	if s.list != kept {
		t.Errorf("RequestsIn on the same requests computed the shapes again")
	}
	if _, err := s.RequestsIn(uniform[:10], 0, math.MaxFloat64); err != nil || s.list == kept || len(s.list.shapes) != 10 {
		t.Errorf("another list: %v, kept %d shapes", err, len(s.list.shapes))
	}
	// A request's error is the one it gives without Shapes, in either.
	bad := append([]*record.Request(nil), uniform[:3]...)
	bad[1] = &record.Request{ID: "bad", OK: true, OutputTokens: 5, FirstTokenAt: 2, DoneAt: 1}
	_, werr := RequestsIn(bad, 0, 10)
	_, gerr := s.RequestsIn(bad, 0, 10)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() || !strings.Contains(gerr.Error(), "request bad") {
		t.Errorf("errors: with Shapes %v, without %v", gerr, werr)
	}
	if _, err := s.RequestsIn([]*record.Request{uniform[0], nil}, 0, 10); err == nil || !strings.Contains(err.Error(), "request 1 is nil") {
		t.Errorf("nil request: %v", err)
	}
}

func benchPowerT(t *testing.T) *PowerData {
	t.Helper()
	s, _, _ := benchData()
	pd, err := NewPowerData(s)
	if err != nil {
		t.Fatal(err)
	}
	return pd
}

// Attribution split over several cores (the shapes, the energy of the
// pieces) gives the very results it gives on one, with either method.
func TestAttributeParallelSame(t *testing.T) {
	pd := benchPowerT(t)
	_, _, chunked := benchData()
	reqs := chunked[:20_000] // about 180,000 pieces: several parts of piecesMin
	for _, method := range []string{"counter", "trapz"} {
		var runs [2][]Attribution
		for i, procs := range []int{1, 3} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				at, err := pd.Attribute(reqs, method)
				if err != nil {
					t.Fatal(err)
				}
				runs[i] = at
			}()
		}
		for j := range runs[0] {
			a, b := runs[0][j], runs[1][j]
			if math.Float64bits(a.EnergyJ) != math.Float64bits(b.EnergyJ) || a.Tokens != b.Tokens {
				t.Fatalf("%s: request %d: one core %+v, three %+v", method, j, a, b)
			}
		}
	}
}
