package measure

import (
	"fmt"
	"math"
	"sort"

	"github.com/joulebench/joulebench/archive/record"
)

// AttributeResident splits GPU energy among requests by residency: a
// request holds a share from the moment it was sent (SentAt) to its end
// (DoneAt), prefill included, where Attribute starts at the first token.
// It is the attribution for questions about the prompt's cost, e.g. what a
// prefix cache saves on the later turns of a conversation
// (docs/methodology.md, "Attribution by residency").
//
// Time is cut at every request's SentAt and DoneAt; each piece's energy
// (Energy(piece, method)) is split equally among the requests resident in
// it. A piece with no resident request (a think time, the gap between a
// response and the next request) stays unattributed. Only successful
// requests with output tokens and DoneAt > SentAt are resident; the others
// get no energy (EnergyJ 0, JPerToken 0) and Tokens as in Attribute.
//
// A resident request is an error when its times are NaN or infinite, when
// DoneAt < SentAt, or when its interval is outside the power samples. The
// result is in the order of reqs; O(n log n + samples).
func (p *PowerData) AttributeResident(reqs []*record.Request, method string) ([]Attribution, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return nil, fmt.Errorf("attribute_resident: %w", err)
	}
	out := make([]Attribution, len(reqs))
	var resident []int
	for i, r := range reqs {
		if r == nil {
			return nil, fmt.Errorf("attribute_resident: request %d is nil", i)
		}
		out[i].ID = r.ID
		if !r.OK || r.OutputTokens <= 0 {
			continue
		}
		out[i].Tokens = float64(r.OutputTokens)
		if err := p.checkResident(r); err != nil {
			return nil, fmt.Errorf("attribute_resident: request %d (%q): %w", i, r.ID, err)
		}
		if r.DoneAt > r.SentAt {
			resident = append(resident, i)
		}
	}
	if len(resident) == 0 {
		return out, nil
	}
	spans := make([][2]float64, len(resident))
	for k, i := range resident {
		spans[k] = [2]float64{reqs[i].SentAt, reqs[i].DoneAt}
	}
	shares, _, err := p.residentShares(spans, nil, useCounter)
	if err != nil {
		return nil, fmt.Errorf("attribute_resident: %w", err)
	}
	for k, i := range resident {
		e := shares[k]
		if math.IsNaN(e) || math.IsInf(e, 0) {
			return nil, fmt.Errorf("attribute_resident: request %q: attributed energy is %v", reqs[i].ID, e)
		}
		out[i].EnergyJ = e
		out[i].JPerToken = e / out[i].Tokens
	}
	return out, nil
}

// residentShares splits the energy of p's devices among spans [a, b]
// (a < b) by residency: time is cut at every span's ends and at the times
// in extra; each piece's energy (Energy(piece)) is split equally among the
// spans over it. It returns each span's share (in the order of spans) and
// idle, the energy of the pieces no span is over. O(n log n + samples).
// AttributeResident and SplitPhases share it: one rule, that every
// resident request draws the same power, for both.
func (p *PowerData) residentShares(spans [][2]float64, extra []float64, useCounter bool) (shares []float64, idle float64, err error) {
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

// checkResident checks a successful request's residency [SentAt, DoneAt]:
// finite, in order, and inside every device's samples.
func (p *PowerData) checkResident(r *record.Request) error {
	a, b := r.SentAt, r.DoneAt
	if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) {
		return fmt.Errorf("sent_at %v or done_at %v is not a finite time", a, b)
	}
	if b < a {
		return fmt.Errorf("done_at %v is before sent_at %v", b, a)
	}
	if b == a {
		return nil
	}
	for _, d := range p.devs {
		if err := d.checkRange(a, b); err != nil {
			return fmt.Errorf("residency %w", err)
		}
	}
	return nil
}
