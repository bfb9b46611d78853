package measure

import "sort"

// residentSharesAllAtOnce is residentShares as it was before it went a
// block at a time (kept verbatim as the reference of
// TestResidentBlocksMatchAllAtOnce): residentShares splits the energy of p's devices among spans [a, b]
// (a < b) by residency: time is cut at every span's ends and at the times
// in extra; each piece's energy (Energy(piece)) is split equally among the
// spans over it. It returns each span's share (in the order of spans) and
// idle, the energy of the pieces no span is over. O(n log n + samples).
// AttributeResident and SplitPhases share it: one rule, that every
// resident request draws the same power, for both.
func (p *PowerData) residentSharesAllAtOnce(spans [][2]float64, extra []float64, useCounter bool) (shares []float64, idle float64, err error) {
	keys := make([]uint64, 0, 2*len(spans)+len(extra))
	for _, sp := range spans {
		keys = append(keys, orderKey(sp[0]), orderKey(sp[1]))
	}
	for _, x := range extra {
		keys = append(keys, orderKey(x))
	}
	bounds := sortedDistinct(keys)
	nPieces := len(bounds) - 1
	if err := p.checkPieces(bounds, useCounter); err != nil {
		return nil, 0, err
	}
	// Spans per piece, by a sweep over arrivals and ends; then
	// cum[m] = Σ_{j<m} E_j / n_j, so a span over pieces [fi, di) gets
	// cum[di] - cum[fi].
	diff := make([]int, nPieces+1)
	at := make([][2]int, len(spans))
	for k, sp := range spans {
		fi := sort.SearchFloat64s(bounds, sp[0])
		di := sort.SearchFloat64s(bounds, sp[1])
		at[k] = [2]int{fi, di}
		diff[fi]++
		diff[di]--
	}
	cum := make([]float64, nPieces+1)
	n := 0
	err = p.piecesEnergy(bounds, useCounter, func(from int, energy []float64) {
		for j, e := range energy {
			m := from + j
			n += diff[m]
			cum[m+1] = cum[m]
			if n > 0 {
				cum[m+1] += e / float64(n)
			} else {
				idle += e
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	shares = make([]float64, len(spans))
	for k := range spans {
		shares[k] = max(0, cum[at[k][1]]-cum[at[k][0]])
	}
	return shares, idle, nil
}
