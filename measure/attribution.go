package measure

import (
	"cmp"
	"fmt"
	"math"
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
// copy them.
//
// What it holds at once, for s segments in p pieces (p ≤ s + requests):
// the pieces' bounds, their rates (float64) and counts of segments
// (int32), each segment's first and last piece (two int32), and the
// pieces' energy a block at a time (piecesBlock), not all of it.
func (p *PowerData) attributeEnergy(reqs []*record.Request, method string, sl *shapeList, idx []int) ([]float64, error) {
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
		for k, sg := range g.segments {
			keys = append(keys, orderKey(sg.a))
			if k+1 == len(g.segments) || g.segments[k+1].a != sg.b {
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
		for k, sg := range g.segments {
			var fi int
			if k > 0 && g.segments[k-1].b == sg.a {
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
		for _, sg := range g.segments {
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
		nSegs += len(sh.segments)
	}
	return gens, nSegs, nil
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
	kind        int
	first, done float64
	tokens      float64 // output tokens counted (0 for a failed request)
	// segments cover the generation (shapeGen only): one over the whole
	// interval when uniform, else one per chunk group.
	segments []segment
}

// genReq is a request with a generation interval, during attribution.
type genReq struct {
	*tokenShape     // its shape, not copied
	pos         int // index in the caller's slice
}

// shapeOf validates a request and classifies it for attribution.
func shapeOf(r *record.Request) (tokenShape, error) {
	var scratch []float64
	return shapeOfBuf(r, &scratch)
}

// shapeOfBuf is shapeOf with scratch, where packed token times are
// unpacked (grown as needed, and kept by the caller from request to
// request).
func shapeOfBuf(r *record.Request, scratch *[]float64) (tokenShape, error) {
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
			sh.segments = chunkSegments(r, ts, sh, sum, sorted)
		}
	}
	if sh.kind == shapeGen && len(sh.segments) == 0 {
		// No token times, or no chunk has time since the previous one:
		// uniform over the whole interval.
		sh.segments = []segment{{a: sh.first, b: sh.done, tokens: sh.tokens}}
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
// count); none when no chunk has time since the previous one.
func chunkSegments(r *record.Request, times []float64, sh tokenShape, sum float64, sorted bool) []segment {
	ts, ws, counts := chunksInOrder(r, times, sh.first, sh.done, sorted)
	n := len(ts)
	// Group consecutive chunks so that at most maxSegments remain.
	per := (n + maxSegments - 1) / maxSegments
	segs := make([]segment, 0, maxSegments)
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
	for _, sg := range s.segments {
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
