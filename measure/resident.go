package measure

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

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
// resident request draws the same power, for both. It goes a block of
// residentBlock ends at a time (residentBlocks).
func (p *PowerData) residentShares(spans [][2]float64, extra []float64, useCounter bool) (shares []float64, idle float64, err error) {
	return p.residentBlocks(spans, extra, useCounter, residentBlock)
}

// residentBlock is how many ends (a span's start and end are two, and
// each time of extra one) the residency split holds at once, about 36
// bytes each: their keys and a radix sort's scratch (16 bytes), and for
// each distinct end its bound, its cum and its change of count (20
// bytes): 9 MB. A million residencies have 2 M ends, in 8 blocks.
const residentBlock = 1 << 18

// residentBlocks is residentShares, holding the ends of a block of time
// at once, about block of them (more only where more than block ends
// share one time), and for each span its block and one number. The
// blocks are ranges of the ends' keys (endKey) in time order
// (planResident); each block's ends are those of the spans that start in
// it (a counting sort of the spans by the block of their start) and of
// those carried from the blocks before, and the times of extra in it.
//
// The arithmetic is the all-at-once computation's, in its order: the
// pieces are the sorted distinct ends (-0 and +0 one); the count of spans
// over a piece is an integer; cum[m] = Σ_{j<m} E_j / n_j and idle, the
// sum of the E_j with n_j = 0, go over the pieces in time order (E_j as
// piecesEnergy gives it, the same for a piece whichever block holds it);
// and a span's share is max(0, cum at its end − cum at its start), the
// cum at its start kept in its share until its end.
func (p *PowerData) residentBlocks(spans [][2]float64, extra []float64, useCounter bool, block int) (shares []float64, idle float64, err error) {
	shares = make([]float64, len(spans))
	n := 2*len(spans) + len(extra)
	if n == 0 {
		return shares, 0, nil
	}
	if len(spans) > math.MaxInt32 {
		return nil, 0, fmt.Errorf("%d spans, more than this implementation indexes", len(spans))
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, sp := range spans {
		lo, hi = min(lo, endKey(sp[0])), max(hi, endKey(sp[1]))
	}
	for _, x := range extra {
		lo, hi = min(lo, endKey(x)), max(hi, endKey(x))
	}
	if lo != hi {
		if err := p.checkPieces([]float64{keyFloat(lo), keyFloat(hi)}, useCounter); err != nil {
			return nil, 0, err
		}
	}
	plan := planResident(spans, extra, n, block, lo, hi+1)
	sw := newResidentSweep(p, useCounter, spans, extra, shares, plan)
	for _, r := range plan {
		if err := sw.block(r); err != nil {
			return nil, 0, err
		}
	}
	return shares, sw.idle, nil
}

// residentSweep is the residency split's state from block to block.
type residentSweep struct {
	p          *PowerData
	useCounter bool
	spans      [][2]float64
	extra      []float64
	shares     []float64 // cum at its start while a span is open
	// The last bound so far (when any), whose piece ends in a later
	// block, with its change of count.
	have     bool
	last     float64
	lastCnt  int32
	inFlight int32   // spans over the piece being swept
	sum      float64 // cum at the last bound
	idle     float64
	// byBlock is the indices of spans by the block of their start, those
	// of block j at byBlock[blockAt[j]:blockAt[j+1]]; carried those with
	// an end after the blocks so far.
	byBlock, carried, next []int32
	blockAt                []int
	blk                    int // the block next
	// Buffers, kept from block to block.
	keys, keysTmp []uint64
	bounds, cum   []float64
	cnt           []int32
}

// newResidentSweep is the sweep of the ends of spans and extra in the
// blocks of plan, with its buffers for the largest block and the spans
// by block (a counting sort by the block of their start, which is in
// one: plan leaves out no end).
func newResidentSweep(p *PowerData, useCounter bool, spans [][2]float64, extra []float64, shares []float64, plan []keyRange) *residentSweep {
	most := 0
	for _, r := range plan {
		most = max(most, r.n)
	}
	s := &residentSweep{p: p, useCounter: useCounter, spans: spans, extra: extra, shares: shares,
		keys: make([]uint64, 0, most), keysTmp: make([]uint64, most),
	}
	s.byBlock, s.blockAt = sortByBlock(plan, len(spans), func(i int) float64 { return spans[i][0] })
	return s
}

// block sweeps the ends of keys in r, after those of every earlier range.
func (s *residentSweep) block(r keyRange) error {
	open := s.collect(r)
	if len(s.keys) == 0 {
		return nil
	}
	s.boundsOf()
	first := 0
	if s.have {
		first = 1 // bounds[0] is the last bound of the blocks before
	}
	dk := s.keys // the block's distinct keys, bounds[first:]
	at := func(k uint64) int {
		i, _ := slices.BinarySearch(dk, k)
		return first + i
	}
	for _, k := range open {
		ka, kb := endKey(s.spans[k][0]), endKey(s.spans[k][1])
		if ka >= r.lo && ka < r.hi {
			s.cnt[at(ka)]++
		}
		if kb >= r.lo && kb < r.hi {
			s.cnt[at(kb)]--
		}
	}
	s.cum[0] = s.sum
	err := s.p.piecesEnergy(s.bounds, s.useCounter, func(from int, energy []float64) {
		for j, e := range energy {
			m := from + j
			s.inFlight += s.cnt[m]
			if s.inFlight > 0 {
				s.sum += e / float64(s.inFlight)
			} else {
				s.idle += e
			}
			s.cum[m+1] = s.sum
		}
	})
	if err != nil {
		return err
	}
	n := len(s.bounds) - 1
	s.have, s.last, s.lastCnt = true, s.bounds[n], s.cnt[n]
	for _, k := range open {
		ka, kb := endKey(s.spans[k][0]), endKey(s.spans[k][1])
		if ka >= r.lo && ka < r.hi {
			s.shares[k] = s.cum[at(ka)]
		}
		if kb >= r.lo && kb < r.hi {
			s.shares[k] = max(0, s.cum[at(kb)]-s.shares[k])
		}
	}
	return nil
}

// collect lists the keys of the ends in r, the next block, unsorted, and
// returns the spans with an end in it: those that start in the block and
// those carried from the blocks before, which it carries on while they
// end after it.
func (s *residentSweep) collect(r keyRange) []int32 {
	s.keys = s.keys[:0]
	s.next = s.next[:0]
	open := s.byBlock[s.blockAt[s.blk]:s.blockAt[s.blk+1]]
	s.blk++
	add := func(k int32) {
		ka, kb := endKey(s.spans[k][0]), endKey(s.spans[k][1])
		if ka >= r.lo && ka < r.hi {
			s.keys = append(s.keys, ka)
		}
		if kb >= r.lo && kb < r.hi {
			s.keys = append(s.keys, kb)
		} else {
			s.next = append(s.next, k)
		}
	}
	for _, k := range s.carried {
		add(k)
	}
	for _, k := range open {
		add(k)
	}
	for _, x := range s.extra {
		if k := endKey(x); k >= r.lo && k < r.hi {
			s.keys = append(s.keys, k)
		}
	}
	// The spans of the block: those carried in, then those starting in
	// it (s.carried is not reused until the next block's collect).
	all := append(s.carried, open...)
	s.carried, s.next = s.next, all
	return all
}

// boundsOf sorts the block's keys and sets its bounds (the last bound of
// the blocks before, then the block's distinct ends), leaving the
// distinct keys in s.keys, with the last bound's change of count and
// none yet for the others.
func (s *residentSweep) boundsOf() {
	if cap(s.keysTmp) < len(s.keys) { // not so: the plan counts the ends
		s.keysTmp = make([]uint64, len(s.keys))
	}
	sorted := sortKeys(s.keys, s.keysTmp[:len(s.keys)])
	if &sorted[0] != &s.keys[0] {
		s.keys, s.keysTmp = sorted, s.keys[:cap(s.keys)]
	}
	s.keys = slices.Compact(s.keys)
	n := len(s.keys) + 1
	if cap(s.bounds) < n {
		c := n + n/8
		s.bounds, s.cum, s.cnt = make([]float64, 0, c), make([]float64, c), make([]int32, 0, c)
	}
	s.bounds, s.cnt = s.bounds[:0], s.cnt[:0]
	if s.have {
		s.bounds, s.cnt = append(s.bounds, s.last), append(s.cnt, s.lastCnt)
	}
	for _, k := range s.keys {
		s.bounds, s.cnt = append(s.bounds, keyFloat(k)), append(s.cnt, 0)
	}
	s.cum = s.cum[:len(s.bounds)]
}

// planResident cuts the keys [lo, hi) of the n ends of spans and extra
// into ranges of at most block ends each, as planBlocks does for
// attribution's segments.
func planResident(spans [][2]float64, extra []float64, n, block int, lo, hi uint64) []keyRange {
	return planRanges(n, block, lo, hi, func(lo, hi uint64) ([]int, uint) { return residentHistogram(spans, extra, lo, hi) })
}

// residentHistogram counts the ends of spans and extra with keys in
// [lo, hi) (hi > lo + 1) in buckets of 1<<shift keys from lo.
func residentHistogram(spans [][2]float64, extra []float64, lo, hi uint64) (hist []int, shift uint) {
	w := hi - lo
	shift = uint(max(0, bits.Len64(w-1)-bits.Len64(histBuckets-1)))
	hist = make([]int, (w-1)>>shift+1)
	count := func(k uint64) {
		if k >= lo && k < hi {
			hist[(k-lo)>>shift]++
		}
	}
	for _, sp := range spans {
		count(endKey(sp[0]))
		count(endKey(sp[1]))
	}
	for _, x := range extra {
		count(endKey(x))
	}
	return hist, shift
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
