package measure

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/joulebench/joulebench/archive/record"
)

// Attribution is one request's share of the GPU energy.
type Attribution struct {
	ID string
	// EnergyJ is the energy attributed to the request's generation interval.
	EnergyJ float64
	// Tokens is the request's output token count (0 for a failed request).
	Tokens float64
	// JPerToken is EnergyJ / Tokens; 0 when the request got no energy.
	JPerToken float64
}

// Attribute splits GPU energy among requests by generation interval
// [FirstTokenAt, DoneAt] (docs/methodology.md, "Attribution").
//
// Time is cut at every boundary where a request's token rate changes; in
// each piece, the piece's energy (Energy(piece, method)) is split among the
// requests generating in it in proportion to the output tokens each produced
// in it. How a request's tokens lie in time:
//   - with TokenTimes: each chunk's tokens were generated uniformly over the
//     time since the previous chunk arrived (the first chunk, at
//     FirstTokenAt, since the start of the interval); chunk k carries
//     TokenCounts[k] tokens (1 when TokenCounts is absent), scaled so that
//     the request's total is OutputTokens. Chunk times are clamped into the
//     interval and taken in time order; a chunk with no time since the
//     previous one adds its tokens to the next chunk that has some (to the
//     last one that has some when none follows). At most maxSegments
//     consecutive groups of chunks are kept per request, so a very long
//     stream costs no more than maxSegments uniform pieces;
//   - without TokenTimes (or when no chunk has time since the previous one,
//     or every count is 0): uniformly over the whole interval.
//
// Between its last chunk and DoneAt a request generates nothing. A piece in
// which nobody generates stays unattributed.
//
// Requests that get no energy (EnergyJ 0, JPerToken 0):
//   - !OK: Tokens 0 (failed requests never count as tokens);
//   - OutputTokens == 0: Tokens 0;
//   - DoneAt == FirstTokenAt (no generation interval, e.g. a single chunk):
//     Tokens is OutputTokens; the request takes no share of any piece and
//     does not cut time.
//
// A successful request with tokens is an error when its times are NaN or
// infinite, when DoneAt < FirstTokenAt, when its interval is outside the
// power samples, or when its TokenCounts do not match its TokenTimes. The
// result is in the order of reqs. O(s log s + samples) for s segments
// (at most maxSegments per request).
func (p *PowerData) Attribute(reqs []*record.Request, method string) ([]Attribution, error) {
	if _, err := p.resolveMethod(method); err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	sl := shapesOf(reqs)
	energy, err := p.attributeEnergy(reqs, method, sl, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Attribution, len(reqs))
	for i, r := range reqs {
		sh := &sl.shapes[i]
		out[i] = Attribution{ID: r.ID, Tokens: sh.tokens}
		if sh.kind == shapeGen {
			out[i].EnergyJ, out[i].JPerToken = energy[i], energy[i]/sh.tokens
		}
	}
	return out, nil
}

// attributeEnergy is Attribute's energy for each request of reqs (0 for
// one without a generation interval), given the shapes of the requests:
// that of reqs[i] is sl's entry idx[i] (i when idx is nil), so that a
// caller with the shapes of the same requests in another order need not
// copy them. It goes a block of attrBlock segment ends at a time
// (attributeBlocks).
func (p *PowerData) attributeEnergy(reqs []*record.Request, method string, sl *shapeList, idx []int) ([]float64, error) {
	return p.attributeBlocks(reqs, method, sl, idx, attrBlock)
}

// attrBlock is how many segment ends (a segment's start and end are two)
// attribution holds at once, about 35 bytes each: their keys and tags
// and a radix sort's scratch (24 bytes), the block's bounds, rate changes
// and counts (20 bytes a distinct end, about half the ends): 9 MB. A run
// of a million requests has 16 M of them, in 62 blocks.
const attrBlock = 1 << 18

// attributeBlocks is attributeEnergy, holding the segment ends of a block
// of time at once, about block of them (more only where more than block
// ends share one time), and for each request with a generation interval
// its place and one number. The blocks are ranges of the ends' keys
// (orderKey) in time order (planBlocks); each is found by a pass over the
// requests' shapes, and its ends sorted by a stable radix sort, so that
// the ends at one time are in the order of the requests and their
// segments.
//
// The arithmetic is the all-at-once computation's, term for term, in its
// order: the pieces are the sorted distinct ends; a piece's rate change
// is the sum, from 0, of +rate at each segment's start and -rate at its
// end in the order of the requests and their segments; the running total
// rate, count and cum[m] = Σ_{j<m} E_j / R_j go over the pieces in time
// order (E_j as piecesEnergy gives it, the same for a piece whichever
// block holds it); and a request's energy is the sum, from 0, over its
// segments in order of rate·(cum at its end − cum at its start), the cum
// at a segment's start kept until its end (at most one segment of a
// request is open at a time).
func (p *PowerData) attributeBlocks(reqs []*record.Request, method string, sl *shapeList, idx []int, block int) ([]float64, error) {
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
	lo, hi := gens[0].first, gens[0].done
	for _, g := range gens {
		lo, hi = min(lo, g.first), max(hi, g.done)
	}
	// The samples cover every generation interval (checkGenRange): this
	// checks the counter.
	if err := p.checkPieces([]float64{lo, hi}, useCounter); err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	plan := planBlocks(gens, 2*nSegs, block, endKey(lo), endKey(hi)+1)
	sw := newAttrSweep(p, useCounter, gens, out, plan)
	for _, r := range plan {
		if err := sw.block(r); err != nil {
			return nil, fmt.Errorf("attribute: %w", err)
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

// endKey is the key (orderKey) of a segment end, -0 as +0: the two are
// one bound, and so always in one block.
func endKey(x float64) uint64 { return orderKey(x + 0) }

// keyRange is the n segment ends whose keys are in [lo, hi).
type keyRange struct {
	lo, hi uint64
	n      int
}

// attrSweep is attribution's state from block to block.
type attrSweep struct {
	p          *PowerData
	useCounter bool
	gens       []genReq
	out        []float64 // by request, as attributeEnergy returns it
	// open[i] is cum at the start of gens[i]'s segment that has started
	// and not ended.
	open []float64
	// The last bound so far (when any), whose piece ends in a later
	// block, with its rate change and count change.
	have      bool
	last      float64
	lastRate  float64
	lastCount int32
	// The sweep's running total rate, count of segments and cum.
	rate   float64
	active int32
	sum    float64
	// byBlock is the indices of gens by the block of their first end,
	// those of block j at byBlock[blockAt[j]:blockAt[j+1]], in order;
	// carried those with ends after the block so far, in order.
	byBlock, carried, merged []int32
	blockAt                  []int
	blk                      int // the block next
	// Buffers, kept from block to block.
	keys, keysTmp []uint64
	tags, tagsTmp []uint32 // gen index << 3 | segment index
	bounds, diff  []float64
	cnt           []int32
}

// newAttrSweep is the sweep of gens' segment ends in the blocks of plan,
// with its buffers for the largest and gens by block (a counting sort by
// the block of their first end, which is in one: plan leaves out no end).
func newAttrSweep(p *PowerData, useCounter bool, gens []genReq, out []float64, plan []keyRange) *attrSweep {
	n := 0
	for _, r := range plan {
		n = max(n, r.n)
	}
	s := &attrSweep{p: p, useCounter: useCounter, gens: gens, out: out, open: make([]float64, len(gens)),
		keys: make([]uint64, 0, n), keysTmp: make([]uint64, n),
		tags: make([]uint32, 0, n), tagsTmp: make([]uint32, n),
	}
	s.byBlock, s.blockAt = sortByBlock(plan, len(gens), func(i int) float64 { return gens[i].first })
	return s
}

// sortByBlock orders the items 0..n-1 by the range of plan their first
// time (first(i)) falls in, by a counting sort that keeps their order
// within a range: byBlock lists them, range j's from blockAt[j] to
// blockAt[j+1]. Attribution's requests and the residency split's spans
// are ordered so.
func sortByBlock(plan []keyRange, n int, first func(i int) float64) (byBlock []int32, blockAt []int) {
	byBlock, blockAt = make([]int32, n), make([]int, len(plan)+1)
	blockOf := func(i int) int {
		k := endKey(first(i))
		return sort.Search(len(plan), func(j int) bool { return plan[j].hi > k })
	}
	for i := range n {
		blockAt[blockOf(i)+1]++
	}
	for j := range plan {
		blockAt[j+1] += blockAt[j]
	}
	at := slices.Clone(blockAt[:len(plan)])
	for i := range n {
		j := blockOf(i)
		byBlock[at[j]] = int32(i)
		at[j]++
	}
	return byBlock, blockAt
}

// block attributes the segment ends of keys in r, after those of every
// earlier range.
func (s *attrSweep) block(r keyRange) error {
	s.collect(r)
	if len(s.keys) == 0 {
		return nil
	}
	s.keys, s.tags, s.keysTmp, s.tagsTmp = sortEnds(s.keys, s.tags, s.keysTmp, s.tagsTmp)
	first := 0
	if s.have {
		first = 1 // bounds[0] is the last bound of the blocks before
	}
	s.boundsOf()
	// cum at each bound takes its rate change's place in diff: entry m
	// is read before it is written.
	err := s.p.piecesEnergy(s.bounds, s.useCounter, func(from int, energy []float64) {
		for m, e := range energy {
			m += from
			s.rate += s.diff[m]
			s.active += s.cnt[m]
			if s.active == 0 {
				s.rate = 0 // drop rounding residue left by the subtractions
			}
			inc := 0.0
			if s.active > 0 && s.rate > 0 {
				inc = e / s.rate
			}
			s.diff[m] = s.sum
			s.sum += inc
		}
	})
	if err != nil {
		return err
	}
	n := len(s.bounds) - 1
	s.have, s.last, s.lastRate, s.lastCount = true, s.bounds[n], s.diff[n], s.cnt[n]
	s.diff[n] = s.sum
	s.attribute(first)
	return nil
}

// collect lists the segment ends of keys in r, the next block, with their
// tags, in the order of the requests and their segments (a segment's
// start before its end): those of the requests whose first end is in the
// block and of those carried from the blocks before, which it carries on
// while they have ends after it.
func (s *attrSweep) collect(r keyRange) {
	s.keys, s.tags = s.keys[:0], s.tags[:0]
	s.merged = mergeSorted(s.merged[:0], s.carried, s.byBlock[s.blockAt[s.blk]:s.blockAt[s.blk+1]])
	s.blk++
	s.carried = s.carried[:0]
	for _, i := range s.merged {
		g := s.gens[i]
		n := g.nSegments()
		if endKey(g.segment(n-1).b) >= r.hi {
			s.carried = append(s.carried, i)
		}
		for k := range n {
			sg := g.segment(k)
			tag := uint32(i)<<3 | uint32(k)
			if ka := endKey(sg.a); ka >= r.lo && ka < r.hi {
				s.keys, s.tags = append(s.keys, ka), append(s.tags, tag)
			}
			if kb := endKey(sg.b); kb >= r.lo && kb < r.hi {
				s.keys, s.tags = append(s.keys, kb), append(s.tags, tag)
			}
		}
	}
	if cap(s.keysTmp) < len(s.keys) { // not so: the plan counts the ends
		s.keysTmp, s.tagsTmp = make([]uint64, len(s.keys)), make([]uint32, len(s.keys))
	}
	s.keysTmp, s.tagsTmp = s.keysTmp[:len(s.keys)], s.tagsTmp[:len(s.keys)]
}

// mergeSorted appends to dst the merge of the ascending lists a and b.
func mergeSorted(dst, a, b []int32) []int32 {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return append(append(dst, a...), b...)
}

// segOf is the segment of a tag and whether the end of key k is its start.
func (s *attrSweep) segOf(tag uint32, k uint64) (segment, bool) {
	sg := s.gens[tag>>3].segment(int(tag & 7))
	return sg, k == endKey(sg.a)
}

// boundsOf sets the block's bounds (the last bound of the blocks before,
// then the distinct ends of the block) with each one's change of rate
// (the sum, from 0, of the rates of the segments starting there less
// those ending there, in the order of the ends) and of count.
func (s *attrSweep) boundsOf() {
	n := 1 // bounds: the distinct keys, and the last bound before
	for i := 1; i < len(s.keys); i++ {
		if s.keys[i] != s.keys[i-1] {
			n++
		}
	}
	if s.have {
		n++
	}
	if cap(s.bounds) < n { // about half the ends, as many from block to block
		c := n + n/8
		s.bounds, s.diff, s.cnt = make([]float64, 0, c), make([]float64, 0, c), make([]int32, 0, c)
	}
	s.bounds, s.diff, s.cnt = s.bounds[:0], s.diff[:0], s.cnt[:0]
	if s.have {
		s.bounds, s.diff, s.cnt = append(s.bounds, s.last), append(s.diff, s.lastRate), append(s.cnt, s.lastCount)
	}
	for i, k := range s.keys {
		if i == 0 || k != s.keys[i-1] {
			s.bounds, s.diff, s.cnt = append(s.bounds, keyFloat(k)), append(s.diff, 0), append(s.cnt, 0)
		}
		sg, start := s.segOf(s.tags[i], k)
		m := len(s.diff) - 1
		if start {
			s.diff[m] += sg.rate()
			s.cnt[m]++
		} else {
			s.diff[m] -= sg.rate()
			s.cnt[m]--
		}
	}
}

// attribute adds to each request the share of its segments that end in
// the block, and keeps cum at the start of those that start in it; diff
// holds cum at each bound, from bounds[first] the block's own.
func (s *attrSweep) attribute(first int) {
	m := first - 1
	for i, k := range s.keys {
		if i == 0 || k != s.keys[i-1] {
			m++
		}
		tag := s.tags[i]
		sg, start := s.segOf(tag, k)
		g := tag >> 3
		if start {
			s.open[g] = s.diff[m]
			continue
		}
		s.out[s.gens[g].pos] += sg.rate() * (s.diff[m] - s.open[g])
	}
}

// sortEnds sorts keys in ascending order by sortKeys' stable LSD radix
// sort, tags alongside; kt and tt, as long as keys, are its scratch. It
// returns the sorted lists and the scratch, each in keys' arrays or the
// scratch's.
func sortEnds(keys []uint64, tags []uint32, kt []uint64, tt []uint32) ([]uint64, []uint32, []uint64, []uint32) {
	return radixSort(keys, tags, kt, tt)
}

// planBlocks cuts the keys [lo, hi) of the n segment ends of gens into
// ranges of at most block ends each (planRanges over endsHistogram).
func planBlocks(gens []genReq, n, block int, lo, hi uint64) []keyRange {
	return planRanges(n, block, lo, hi, func(lo, hi uint64) ([]int, uint) { return endsHistogram(gens, lo, hi) })
}

// planRanges cuts the keys [lo, hi) of n ends into ranges of at most
// block ends each, in order, leaving out those with none: by a histogram
// of the ends over histBuckets equal ranges (hist: the counts in buckets
// of 1<<shift keys from lo), whose consecutive buckets are grouped while
// they fit, and whose bucket of more than block ends is cut again by its
// own histogram (a pass over the ends each), down to a single key, which
// is one range however many ends it has. Attribution's segments
// (planBlocks) and the residency split's spans (planResident) are cut
// so.
func planRanges(n, block int, lo, hi uint64, hist func(lo, hi uint64) ([]int, uint)) []keyRange {
	var out []keyRange
	var split func(lo, hi uint64, n int)
	split = func(lo, hi uint64, n int) {
		if n <= block || hi-lo <= 1 {
			out = append(out, keyRange{lo, hi, n})
			return
		}
		counts, shift := hist(lo, hi)
		acc, from := 0, lo
		for b, c := range counts {
			bLo, bHi := lo+uint64(b)<<shift, hi
			if b+1 < len(counts) {
				bHi = lo + uint64(b+1)<<shift
			}
			switch {
			case c > block:
				if acc > 0 {
					out = append(out, keyRange{from, bLo, acc})
				}
				split(bLo, bHi, c)
				acc, from = 0, bHi
			case acc+c > block:
				out = append(out, keyRange{from, bLo, acc})
				acc, from = c, bLo
			default:
				acc += c
			}
		}
		if acc > 0 {
			out = append(out, keyRange{from, hi, acc})
		}
	}
	split(lo, hi, n)
	return out
}

// histBuckets is the most buckets of planBlocks' histograms (12 bits).
const histBuckets = 1 << 12

// endsHistogram counts the segment ends of gens with keys in [lo, hi)
// (hi > lo + 1) in buckets of 1<<shift keys from lo.
func endsHistogram(gens []genReq, lo, hi uint64) (hist []int, shift uint) {
	w := hi - lo
	shift = uint(max(0, bits.Len64(w-1)-bits.Len64(histBuckets-1)))
	hist = make([]int, (w-1)>>shift+1)
	for _, g := range gens {
		if endKey(g.done) < lo || endKey(g.first) >= hi {
			continue
		}
		for k := range g.nSegments() {
			sg := g.segment(k)
			for _, k := range [2]uint64{endKey(sg.a), endKey(sg.b)} {
				if k >= lo && k < hi {
					hist[(k-lo)>>shift]++
				}
			}
		}
	}
	return hist, shift
}

// generating lists the requests of reqs with a generation interval (their
// shape in sl: entry idx[i], i when idx is nil) and counts their segments.
func generating(reqs []*record.Request, sl *shapeList, idx []int) ([]genReq, int, error) {
	gens := make([]genReq, 0, len(reqs))
	nSegs := 0
	for i, r := range reqs {
		if r == nil {
			return nil, 0, fmt.Errorf("attribute: request %d is nil", i)
		}
		at := i
		if idx != nil {
			at = idx[i]
		}
		if err := sl.err(at); err != nil {
			return nil, 0, fmt.Errorf("attribute: request %d (%q): %w", i, r.ID, err)
		}
		sh := &sl.shapes[at]
		if sh.kind != shapeGen {
			continue
		}
		gens = append(gens, genReq{pos: i, tokenShape: sh})
		nSegs += sh.nSegments()
	}
	return gens, nSegs, nil
}

// checkGenRange reports the first generation interval not covered by every
// device's samples, naming the request and the device.
func (p *PowerData) checkGenRange(reqs []*record.Request, gens []genReq) error {
	lo, hi, _, _ := p.commonRange()
	for _, g := range gens {
		if g.first >= lo && g.done <= hi {
			continue
		}
		for _, d := range p.devs {
			if err := d.checkRange(g.first, g.done); err != nil {
				return fmt.Errorf("request %q: generation %w", reqs[g.pos].ID, err)
			}
		}
	}
	return nil
}

// Kinds of request for attribution.
const (
	shapeNone    = iota // failed, or no output tokens
	shapeZeroLen        // tokens but DoneAt == FirstTokenAt
	shapeGen            // tokens over a generation interval of positive length
)

// maxSegments bounds the uniform segments a chunked request is cut into.
const maxSegments = 8

// segment is a stretch [a, b] (a < b) over which a request generated tokens
// at a constant rate.
type segment struct {
	a, b   float64
	tokens float64
}

func (s segment) rate() float64 { return s.tokens / (s.b - s.a) }

// tokenShape says how a request's output tokens lie in time.
type tokenShape struct {
	first, done float64
	tokens      float64 // output tokens counted (0 for a failed request)
	kind        uint8
	// The segments cover the generation (shapeGen only): one over the
	// whole interval when uniform, else one per chunk group. nSeg of
	// them are held at enc, exactly, in fewer numbers (setSegments):
	// segment and nSegments read them.
	nSeg   uint8
	layout uint8
	enc    *float64
}

// genReq is a request with a generation interval, during attribution.
type genReq struct {
	*tokenShape     // its shape, not copied
	pos         int // index in the caller's slice
}

// shapeOf validates a request and classifies it for attribution.
func shapeOf(r *record.Request) (tokenShape, error) {
	var scratch []float64
	return shapeOfBuf(r, &scratch, nil)
}

// shapeOfBuf is shapeOf with scratch, where packed token times are
// unpacked (grown as needed, and kept by the caller from request to
// request), and the segments held in ar's memory (their own when ar is
// nil).
func shapeOfBuf(r *record.Request, scratch *[]float64, ar *floatArena) (tokenShape, error) {
	if !r.OK {
		return tokenShape{kind: shapeNone}, nil
	}
	if r.OutputTokens < 0 {
		return tokenShape{}, fmt.Errorf("negative output_tokens %d", r.OutputTokens)
	}
	if r.OutputTokens == 0 {
		return tokenShape{kind: shapeNone}, nil
	}
	sh := tokenShape{first: r.FirstTokenAt, done: r.DoneAt, tokens: float64(r.OutputTokens)}
	for _, v := range [...]float64{r.FirstTokenAt, r.DoneAt} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return tokenShape{}, fmt.Errorf("invalid first_token_at/done_at %v/%v", r.FirstTokenAt, r.DoneAt)
		}
	}
	if r.DoneAt < r.FirstTokenAt {
		return tokenShape{}, fmt.Errorf("done_at %s is before first_token_at %s", fmtT(r.DoneAt), fmtT(r.FirstTokenAt))
	}
	if r.DoneAt == r.FirstTokenAt {
		sh.kind = shapeZeroLen
	} else {
		sh.kind = shapeGen
	}
	if r.TokenTimesLen() > 0 {
		ts := r.TokenTimes
		if r.TokenTimesPacked() {
			*scratch = r.AppendTokenTimes((*scratch)[:0])
			ts = *scratch
		}
		sum, sorted, err := chunkWeights(r, ts, sh.first, sh.done)
		if err != nil {
			return tokenShape{}, err
		}
		if sh.kind == shapeGen && sum > 0 {
			var buf [maxSegments]segment
			sh.setSegments(chunkSegments(r, ts, sh, sum, sorted, buf[:0]), ar)
		}
	}
	if sh.kind == shapeGen && sh.nSeg == 0 {
		// No token times, or no chunk has time since the previous one:
		// uniform over the whole interval.
		sh.setSegments([]segment{{a: sh.first, b: sh.done, tokens: sh.tokens}}, ar)
	}
	return sh, nil
}

// chunkWeights checks a request's chunks (token_times, token_counts) and
// returns the tokens they count and whether their times, clamped to
// [first, done], are in order.
func chunkWeights(r *record.Request, ts []float64, first, done float64) (sum float64, sorted bool, err error) {
	if r.TokenCounts != nil && len(r.TokenCounts) != len(ts) {
		return 0, false, fmt.Errorf("token_counts has %d entries, token_times %d", len(r.TokenCounts), len(ts))
	}
	if r.TokenCounts == nil && inOrder(ts, first, done) {
		return float64(len(ts)), true, nil // the usual case, checked in one comparison per chunk
	}
	sorted = true
	prevT := math.Inf(-1)
	for k, t := range ts {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return 0, false, fmt.Errorf("token_times[%d] is %v", k, t)
		}
		w := 1.0
		if r.TokenCounts != nil {
			if r.TokenCounts[k] < 0 {
				return 0, false, fmt.Errorf("token_counts[%d] is negative (%d)", k, r.TokenCounts[k])
			}
			w = float64(r.TokenCounts[k])
		}
		c := min(max(t, first), done)
		sorted = sorted && c >= prevT
		prevT = c
		sum += w
	}
	return sum, sorted, nil
}

// chunksInOrder returns a request's chunk times (ts, its token times) in
// time order with their weights: as recorded (the usual case, which needs no copy: ws nil,
// counts the request's), else a stably sorted copy of their clamped times
// and weights (counts nil).
func chunksInOrder(r *record.Request, times []float64, first, done float64, sorted bool) (ts, ws []float64, counts []int) {
	ts, counts = times, r.TokenCounts
	if sorted {
		return ts, nil, counts
	}
	n := len(ts)
	type chunk struct{ t, w float64 }
	chunks := make([]chunk, n)
	for k, t := range ts {
		chunks[k] = chunk{min(max(t, first), done), 1}
		if counts != nil {
			chunks[k].w = float64(counts[k])
		}
	}
	slices.SortStableFunc(chunks, func(x, y chunk) int { return cmp.Compare(x.t, y.t) })
	ts, ws = make([]float64, n), make([]float64, n)
	for k, c := range chunks {
		ts[k], ws[k] = c.t, c.w
	}
	return ts, ws, nil
}

// chunkSegments cuts a request's generation into at most maxSegments
// uniform segments, grouping consecutive chunks (sum: the tokens they
// count), appended to segs; none when no chunk has time since the
// previous one.
func chunkSegments(r *record.Request, times []float64, sh tokenShape, sum float64, sorted bool, segs []segment) []segment {
	ts, ws, counts := chunksInOrder(r, times, sh.first, sh.done, sorted)
	n := len(ts)
	// Group consecutive chunks so that at most maxSegments remain.
	per := (n + maxSegments - 1) / maxSegments
	prev, carry := sh.first, 0.0
	scale := sh.tokens / sum
	// With one token per chunk, a whole group adds scale per times to a
	// carry of 0 (the usual case) and so gives the same sum each time:
	// it is added up once (fromZero, when haveFromZero).
	uniform := ws == nil && counts == nil
	fromZero, haveFromZero := 0.0, false
	for k := 0; k < n; k += per {
		end := min(k+per, n)
		whole := uniform && end-k == per && carry == 0
		if whole && haveFromZero {
			carry = fromZero
		} else {
			for j := k; j < end; j++ {
				w := 1.0
				switch {
				case ws != nil:
					w = ws[j]
				case counts != nil:
					w = float64(counts[j])
				}
				carry += w * scale
			}
			if whole {
				fromZero, haveFromZero = carry, true
			}
		}
		t := min(max(ts[end-1], sh.first), sh.done)
		if t > prev && carry > 0 {
			segs = append(segs, segment{a: prev, b: t, tokens: carry})
			prev, carry = t, 0
		}
	}
	if len(segs) > 0 {
		segs[len(segs)-1].tokens += carry
	}
	return segs
}

// inOrder reports whether ts is in time order within [first, done]: no
// chunk time to clamp or sort, none NaN or infinite (those fail the
// comparison).
func inOrder(ts []float64, first, done float64) bool {
	prev := first
	for _, t := range ts {
		if !(t >= prev && t <= done) {
			return false
		}
		prev = t
	}
	return true
}

// tokensIn returns how many of a request's output tokens were generated in
// [a, b] (closed), pro rata over its segments; a request without interval
// length counts whole when its time is in [a, b].
func (s *tokenShape) tokensIn(a, b float64) float64 {
	switch s.kind {
	case shapeNone:
		return 0
	case shapeZeroLen:
		if s.first >= a && s.first <= b {
			return s.tokens
		}
		return 0
	}
	tok := 0.0
	for k := range s.nSegments() {
		sg := s.segment(k)
		lo, hi := max(sg.a, a), min(sg.b, b)
		if hi <= lo {
			continue
		}
		if lo == sg.a && hi == sg.b {
			tok += sg.tokens
		} else {
			tok += sg.tokens * (hi - lo) / (sg.b - sg.a)
		}
	}
	return tok
}
