package measure

import (
	"fmt"
	"math"
	"sort"

	"github.com/joulebench/joulebench/archive/record"
)

// attributeEnergyAllAtOnce is attributeEnergy as it was before it went a
// block at a time (kept verbatim as the reference of
// TestAttributeBlocksMatchAllAtOnce): attributeEnergy is Attribute's energy for each request of reqs (0 for
// one without a generation interval), given the shapes of the requests:
// that of reqs[i] is sl's entry idx[i] (i when idx is nil), so that a
// caller with the shapes of the same requests in another order need not
// copy them.
//
// What it holds at once, for s segments in p pieces (p ≤ s + requests):
// the pieces' bounds, their rates (float64) and counts of segments
// (int32), each segment's first and last piece (two int32), and the
// pieces' energy a block at a time (piecesBlock), not all of it.
func (p *PowerData) attributeEnergyAllAtOnce(reqs []*record.Request, method string, sl *shapeList, idx []int) ([]float64, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	out := make([]float64, len(reqs))
	gens, nSegs, err := generating(reqs, sl, idx)
	if err != nil {
		return nil, err
	}
	if nSegs == 0 {
		return out, nil
	}
	if nSegs > math.MaxInt32/4 {
		return nil, fmt.Errorf("attribute: %d generation segments, more than this implementation indexes", nSegs)
	}
	if err := p.checkGenRange(reqs, gens); err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}

	// Pieces: the sorted distinct segment boundaries.
	// A request's segments follow each other: each contributes its start,
	// and the last one its end too.
	// They are sorted as keys (orderKey), so that the list of the
	// boundaries is not held beside the two lists a radix sort needs.
	keys := make([]uint64, 0, nSegs+len(gens))
	for _, g := range gens {
		for k, sg := range g.segs() {
			keys = append(keys, orderKey(sg.a))
			if k+1 == len(g.segs()) || g.segs()[k+1].a != sg.b {
				keys = append(keys, orderKey(sg.b))
			}
		}
	}
	bounds := sortedDistinct(keys)
	nPieces := len(bounds) - 1
	if err := p.checkPieces(bounds, useCounter); err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}

	// Total token rate per piece, by a sweep over rate changes. span holds
	// each segment's pieces [fi, di) (bounds[fi] = a, bounds[di] = b), two
	// entries per segment in the order of gens and their segments.
	rateDiff := make([]float64, nPieces+1)
	cntDiff := make([]int32, nPieces+1)
	span := make([]int32, 0, 2*nSegs)
	for _, g := range gens {
		for k, sg := range g.segs() {
			var fi int
			if k > 0 && g.segs()[k-1].b == sg.a {
				fi = int(span[len(span)-1]) // a request's segments follow each other
			} else {
				fi = sort.SearchFloat64s(bounds, sg.a)
			}
			di := gallop(bounds, fi, sg.b)
			span = append(span, int32(fi), int32(di))
			rateDiff[fi] += sg.rate()
			rateDiff[di] -= sg.rate()
			cntDiff[fi]++
			cntDiff[di]--
		}
	}
	// cum[m] = Σ_{j<m} E_j / R_j (R_j the total token rate in piece j), so
	// a segment of rate r over pieces [fi, di) gets r·(cum[di] - cum[fi]).
	// cum takes rateDiff's place: entry m is read before cum[m] is written.
	cum := rateDiff
	rate := 0.0
	active := int32(0)
	sum := 0.0
	err = p.piecesEnergy(bounds, useCounter, func(from int, energy []float64) {
		for m, e := range energy {
			m += from
			rate += rateDiff[m]
			active += cntDiff[m]
			if active == 0 {
				rate = 0 // drop rounding residue left by the subtractions
			}
			inc := 0.0
			if active > 0 && rate > 0 {
				inc = e / rate
			}
			cum[m] = sum
			sum += inc
		}
	})
	if err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	cum[nPieces] = sum
	k := 0
	for _, g := range gens {
		for _, sg := range g.segs() {
			out[g.pos] += sg.rate() * (cum[span[k+1]] - cum[span[k]])
			k += 2
		}
	}
	for _, g := range gens {
		e := max(0, out[g.pos])
		if math.IsNaN(e) || math.IsInf(e, 0) {
			return nil, fmt.Errorf("attribute: request %q: attributed energy is %v", reqs[g.pos].ID, e)
		}
		out[g.pos] = e
	}
	return out, nil
}

// gallop returns the index of x in bounds (sorted, x present), searching
// forward from `from` (bounds[from] ≤ x) in O(log(result - from)).
func gallop(bounds []float64, from int, x float64) int {
	lo, step := from, 1
	for lo+step < len(bounds) && bounds[lo+step] <= x {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(bounds))
	return lo + sort.SearchFloat64s(bounds[lo:hi], x)
}
