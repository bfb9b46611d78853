package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// The residency split a block of ends at a time, with blocks of 1 to 9
// ends: every block edge falls between two of the ends (or holds the
// ends at one time alone), and a span lost or counted twice at an edge,
// or a piece's energy given to the wrong side, changes the hand-worked
// figures.
//
// On flat100 (100 W: a piece of length L holds 100·L J), spans
// A [1, 4], B [2, 4], C [4, 6], D [7, 9] and the times 0.5 and 9.5 of
// extra: bounds 0.5, 1, 2, 4, 6, 7, 9, 9.5 (nine ends, two at 4, which
// is where A and B end and C starts).
//
//	[0.5, 1] nobody:   50 J idle
//	[1, 2]   A alone: 100 J to A
//	[2, 4]   A and B: 200 J, 100 J each
//	[4, 6]   C alone: 200 J to C
//	[6, 7]   nobody:  100 J idle
//	[7, 9]   D alone: 200 J to D
//	[9, 9.5] nobody:   50 J idle
//
// A 200, B 100, C 200, D 200, idle 200: 900 J = 100 W · 9 s.
func TestResidentBlocksHandWorked(t *testing.T) {
	pd := flat100(t)
	spans := [][2]float64{{1, 4}, {2, 4}, {4, 6}, {7, 9}}
	extra := []float64{9.5, 0.5}
	want := []float64{200, 100, 200, 200}
	for block := 1; block <= 9; block++ {
		shares, idle, err := pd.residentBlocks(spans, extra, false, block)
		if err != nil {
			t.Fatalf("block %d: %v", block, err)
		}
		for k, w := range want {
			if math.Abs(shares[k]-w) > 1e-12*w {
				t.Errorf("block %d: span %d got %v J, want %v", block, k, shares[k], w)
			}
		}
		if math.Abs(idle-200) > 1e-12*200 {
			t.Errorf("block %d: idle %v J, want 200", block, idle)
		}
	}
}

// The residency split a block at a time gives the all-at-once
// computation's figures bit for bit (residentSharesAllAtOnce, the code
// before blocks), or its error, on random spans whose ends often
// coincide (times on a grid, touching spans, many ends at one time),
// with and without times of extra, whatever the blocks: from one end
// each to all at once; and so do AttributeResident and SplitPhases.
func TestResidentBlocksMatchAllAtOnce(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 47))
		pd := mustPower(t, randomPower(rng, 2, 40))
		spans := randomSpans(rng, 200, 1, 40)
		for _, method := range []bool{false, true} {
			for _, extra := range [][]float64{nil, {1, 40}, {3.5, 20.25}} {
				for _, block := range []int{1, 2, 3, 5, 16, 100, 399, residentBlock} {
					what := fmt.Sprintf("seed %d, counter %v, extra %v, block %d", seed, method, extra, block)
					want, wantIdle, wantErr := pd.residentSharesAllAtOnce(spans, extra, method)
					got, idle, err := pd.residentBlocks(spans, extra, method, block)
					if fmt.Sprint(err) != fmt.Sprint(wantErr) {
						t.Fatalf("%s: error %v, all at once %v", what, err, wantErr)
					}
					if math.Float64bits(idle) != math.Float64bits(wantIdle) {
						t.Errorf("%s: idle %v J, all at once %v", what, idle, wantIdle)
					}
					for k := range want {
						if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
							t.Errorf("%s: span %d: %v J, all at once %v", what, k, got[k], want[k])
						}
					}
				}
			}
		}
	}
}

// randomSpans are n spans on [lo, hi]: half of them on a grid of 0.25 s
// (so that many share their ends, and some touch), the others anywhere.
func randomSpans(rng *rand.Rand, n int, lo, hi float64) [][2]float64 {
	spans := make([][2]float64, n)
	for k := range spans {
		if k%2 == 0 {
			a := lo + 0.25*float64(rng.IntN(int((hi-lo-4)*4)))
			spans[k] = [2]float64{a, a + 0.25*float64(1+rng.IntN(12))}
			continue
		}
		a := lo + rng.Float64()*(hi-lo-4)
		spans[k] = [2]float64{a, a + 0.01 + rng.Float64()*3}
	}
	return spans
}

// A span outside the samples, and a device without a counter, are the
// errors of the all-at-once computation.
func TestResidentBlocksErrors(t *testing.T) {
	pd := flat100(t)
	for _, spans := range [][][2]float64{{{1, 4}, {8, 11}}, {{-1, 2}}} {
		_, _, wantErr := pd.residentSharesAllAtOnce(spans, nil, false)
		_, _, err := pd.residentBlocks(spans, nil, false, 1)
		if err == nil || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("spans %v: error %v, all at once %v", spans, err, wantErr)
		}
	}
	_, _, wantErr := pd.residentSharesAllAtOnce([][2]float64{{1, 4}}, nil, true)
	_, _, err := pd.residentBlocks([][2]float64{{1, 4}}, nil, true, 1)
	if err == nil || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Errorf("no counter: error %v, all at once %v", err, wantErr)
	}
	// No end at all: no share, nothing idle.
	shares, idle, err := pd.residentBlocks(nil, nil, false, 1)
	if err != nil || len(shares) != 0 || idle != 0 {
		t.Errorf("no span: %v, %v, %v; want none, 0, no error", shares, idle, err)
	}
}

// AttributeResident and SplitPhases, which go through residentShares,
// give the figures of the all-at-once computation bit for bit on random
// requests.
func TestResidentCallersMatchAllAtOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 47))
	pd := mustPower(t, randomPower(rng, 2, 40))
	spans := randomSpans(rng, 300, 1, 40)
	reqs := make([]*record.Request, len(spans))
	for k, sp := range spans {
		reqs[k] = resReq(fmt.Sprint(k), sp[0], sp[0]+(sp[1]-sp[0])*rng.Float64(), sp[1], 1+rng.IntN(50))
	}
	att, err := pd.AttributeResident(reqs, MethodTrapz)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := pd.residentSharesAllAtOnce(spans, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for k := range spans {
		if math.Float64bits(att[k].EnergyJ) != math.Float64bits(want[k]) {
			t.Errorf("AttributeResident: request %d: %v J, all at once %v", k, att[k].EnergyJ, want[k])
		}
	}
	got, err := pd.SplitPhases(reqs, 2, 30, MethodTrapz)
	if err != nil {
		t.Fatal(err)
	}
	var phase [][2]float64
	var prefill []bool
	for _, r := range reqs {
		lo, hi := max(r.SentAt, 2), min(r.DoneAt, 30)
		if pa, pb := lo, min(r.FirstTokenAt, hi); pb > pa {
			phase, prefill = append(phase, [2]float64{pa, pb}), append(prefill, true)
		}
		if da, db := max(r.FirstTokenAt, lo), hi; db > da {
			phase, prefill = append(phase, [2]float64{da, db}), append(prefill, false)
		}
	}
	shares, idle, err := pd.residentSharesAllAtOnce(phase, []float64{2, 30}, false)
	if err != nil {
		t.Fatal(err)
	}
	var wantSplit PhaseSplit
	wantSplit.IdleJ = idle
	for k, e := range shares {
		if prefill[k] {
			wantSplit.PrefillJ += e
		} else {
			wantSplit.DecodeJ += e
		}
	}
	if got.PrefillJ != wantSplit.PrefillJ || got.DecodeJ != wantSplit.DecodeJ || got.IdleJ != wantSplit.IdleJ {
		t.Errorf("SplitPhases: %+v, all at once %+v", got, wantSplit)
	}
}
