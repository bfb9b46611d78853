package metricdefs

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/joulebench/joulebench/archive"
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
// [FirstTokenAt, DoneAt] (DESIGN.md, "Attribution").
//
// Time is cut at every interval boundary of the requests that generate; in
// each piece, the piece's energy (Energy(piece, method)) is split among the
// requests generating in it in proportion to the output tokens each produced
// in it. A request's tokens are placed in time by its TokenTimes when it has
// them: chunk k carries TokenCounts[k] tokens (1 when TokenCounts is absent),
// scaled so that the request's total is OutputTokens, and belongs to the
// piece [start, end) that contains its time, clamped into the request's own
// interval (so the first chunk, at FirstTokenAt, falls in the first piece and
// the last, at DoneAt, in the last). Without TokenTimes, or when every chunk
// count is 0, the tokens are spread uniformly over the interval. A piece in
// which nobody generates stays unattributed. A piece in which requests
// generate but none of them has a token in it (only requests with
// TokenTimes, none with a chunk in the piece: common when many requests
// overlap and pieces are shorter than the gap between chunks) is split in
// proportion to their mean token rates, OutputTokens / interval length, as
// if their tokens were uniform; so the energy of every piece in which someone
// generates is attributed in full.
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
// result is in the order of reqs. O((n + chunks) log n + samples).
func (p *PowerData) Attribute(reqs []*archive.Request, method string) ([]Attribution, error) {
	useCounter, err := p.resolveMethod(method)
	if err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	out := make([]Attribution, len(reqs))
	gens := make([]genReq, 0, len(reqs))
	nChunks := 0
	for i, r := range reqs {
		if r == nil {
			return nil, fmt.Errorf("attribute: request %d is nil", i)
		}
		out[i].ID = r.ID
		sh, err := shapeOf(r)
		if err != nil {
			return nil, fmt.Errorf("attribute: request %d (%q): %w", i, r.ID, err)
		}
		out[i].Tokens = sh.tokens
		if sh.kind == shapeGen {
			gens = append(gens, genReq{pos: i, tokenShape: sh})
			if sh.chunked {
				nChunks += len(r.TokenTimes)
			}
		}
	}
	if len(gens) == 0 {
		return out, nil
	}
	if err := p.checkGenRange(reqs, gens); err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}

	// Pieces: the sorted distinct interval boundaries.
	bounds := make([]float64, 0, 2*len(gens))
	for _, g := range gens {
		bounds = append(bounds, g.first, g.done)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	nPieces := len(bounds) - 1
	energy, err := p.piecesEnergy(bounds, useCounter)
	if err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}

	// Tokens per piece: uniform requests contribute rate×length (a sweep
	// over rate changes), chunked ones their chunks.
	rateDiff := make([]float64, nPieces+1) // uniform requests
	cntDiff := make([]int32, nPieces+1)
	crateDiff := make([]float64, nPieces+1) // chunked requests (fallback)
	ccntDiff := make([]int32, nPieces+1)
	chunkTok := make([]float64, nPieces)
	chunkPiece := make([]int32, 0, nChunks)
	for gi := range gens {
		g := &gens[gi]
		g.fi = sort.SearchFloat64s(bounds, g.first)
		g.di = g.fi + sort.SearchFloat64s(bounds[g.fi:], g.done)
		g.rate = g.tokens / (g.done - g.first)
		if !g.chunked {
			rateDiff[g.fi] += g.rate
			rateDiff[g.di] -= g.rate
			cntDiff[g.fi]++
			cntDiff[g.di]--
			continue
		}
		crateDiff[g.fi] += g.rate
		crateDiff[g.di] -= g.rate
		ccntDiff[g.fi]++
		ccntDiff[g.di]--
		r := reqs[g.pos]
		g.chunk0 = len(chunkPiece)
		m := g.fi
		for k, t := range r.TokenTimes {
			// piece [bounds[m], bounds[m+1]) holding t, clamped to [fi, di-1];
			// galloping on from the previous chunk's piece when the times
			// are in order (the usual case), else a binary search
			if t >= bounds[m] {
				m = pieceFrom(bounds, m, g.di, t)
			} else {
				m = pieceOf(bounds, g.fi, g.di, t)
			}
			chunkTok[m] += g.chunkWeight(r, k)
			chunkPiece = append(chunkPiece, int32(m))
		}
	}

	// perTok[m] = energy per token in piece m; cumPerRate[m] = Σ_{j<m}
	// E_j·len_j / T_j, so that a uniform request of rate r over pieces
	// [fi, di) gets r·(cumPerRate[di] - cumPerRate[fi]). cumFallback is the
	// same over the pieces without tokens, for the chunked requests' rates.
	perTok := make([]float64, nPieces)
	cumPerRate := make([]float64, nPieces+1)
	cumFallback := make([]float64, nPieces+1)
	rate, crate := 0.0, 0.0
	active, cactive := int32(0), int32(0)
	for m := range nPieces {
		rate += rateDiff[m]
		active += cntDiff[m]
		if active == 0 {
			rate = 0 // drop rounding residue left by the subtractions
		}
		crate += crateDiff[m]
		cactive += ccntDiff[m]
		if cactive == 0 {
			crate = 0
		}
		length := bounds[m+1] - bounds[m]
		total := rate*length + chunkTok[m]
		inc, fb := 0.0, 0.0
		switch {
		case total > 0:
			perTok[m] = energy[m] / total
			if active > 0 {
				if d := rate + chunkTok[m]/length; d > 0 {
					inc = energy[m] / d
				}
			}
		case cactive > 0 && crate > 0:
			fb = energy[m] / crate
		}
		cumPerRate[m+1] = cumPerRate[m] + inc
		cumFallback[m+1] = cumFallback[m] + fb
	}

	for _, g := range gens {
		var e float64
		if !g.chunked {
			e = g.rate * (cumPerRate[g.di] - cumPerRate[g.fi])
		} else {
			r := reqs[g.pos]
			for k := range r.TokenTimes {
				e += g.chunkWeight(r, k) * perTok[chunkPiece[g.chunk0+k]]
			}
			e += g.rate * (cumFallback[g.di] - cumFallback[g.fi])
		}
		e = max(0, e)
		if math.IsNaN(e) || math.IsInf(e, 0) {
			return nil, fmt.Errorf("attribute: request %q: attributed energy is %v", reqs[g.pos].ID, e)
		}
		out[g.pos].EnergyJ = e
		out[g.pos].JPerToken = e / g.tokens
	}
	return out, nil
}

// pieceOf returns the m in [fi, di-1] with bounds[m] ≤ t < bounds[m+1],
// clamped: fi for t < bounds[fi], di-1 for t ≥ bounds[di-1].
func pieceOf(bounds []float64, fi, di int, t float64) int {
	lo, hi := fi, di-1 // answer in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if bounds[mid] <= t {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// pieceFrom is pieceOf for bounds[from] ≤ t, from in [fi, di-1]: it
// gallops forward from `from`, in O(log(result - from)).
func pieceFrom(bounds []float64, from, di int, t float64) int {
	last := di - 1
	lo, step := from, 1 // bounds[lo] ≤ t
	for {
		next := lo + step
		if next > last || bounds[next] > t {
			return pieceOf(bounds, lo, min(next, last+1), t)
		}
		lo, step = next, step*2
	}
}

// checkGenRange reports the first generation interval not covered by every
// device's samples, naming the request and the device.
func (p *PowerData) checkGenRange(reqs []*archive.Request, gens []genReq) error {
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

// tokenShape says how a request's output tokens lie in time.
type tokenShape struct {
	kind        int
	first, done float64
	tokens      float64 // output tokens counted (0 for a failed request)
	chunked     bool    // tokens placed by TokenTimes
	scale       float64 // tokens per unit of chunk weight when chunked
}

// genReq is a request with a generation interval, during attribution.
type genReq struct {
	tokenShape
	pos    int     // index in the caller's slice
	fi, di int     // bounds[fi] = first, bounds[di] = done
	rate   float64 // mean tokens/s over the interval
	chunk0 int     // offset of its chunks in chunkPiece
}

// chunkWeight is the number of tokens chunk k stands for.
func (s *tokenShape) chunkWeight(r *archive.Request, k int) float64 {
	if r.TokenCounts != nil {
		return float64(r.TokenCounts[k]) * s.scale
	}
	return s.scale
}

// chunkTime is chunk k's time clamped into the generation interval.
func (s *tokenShape) chunkTime(r *archive.Request, k int) float64 {
	return min(max(r.TokenTimes[k], s.first), s.done)
}

// shapeOf validates a request and classifies it for attribution.
func shapeOf(r *archive.Request) (tokenShape, error) {
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
	if len(r.TokenTimes) == 0 {
		return sh, nil
	}
	if r.TokenCounts != nil && len(r.TokenCounts) != len(r.TokenTimes) {
		return tokenShape{}, fmt.Errorf("token_counts has %d entries, token_times %d", len(r.TokenCounts), len(r.TokenTimes))
	}
	sum := 0.0
	for k, t := range r.TokenTimes {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return tokenShape{}, fmt.Errorf("token_times[%d] is %v", k, t)
		}
		w := 1.0
		if r.TokenCounts != nil {
			if r.TokenCounts[k] < 0 {
				return tokenShape{}, fmt.Errorf("token_counts[%d] is negative (%d)", k, r.TokenCounts[k])
			}
			w = float64(r.TokenCounts[k])
		}
		sum += w
	}
	if sum > 0 {
		sh.chunked = true
		sh.scale = sh.tokens / sum
	}
	return sh, nil
}

// tokensIn returns how many of a request's output tokens were generated in
// [a, b] (closed): chunk weights by (clamped) chunk time when chunked, else
// the uniform share of the interval that lies in [a, b]; a request without
// interval length counts whole when its time is in [a, b].
func (s *tokenShape) tokensIn(r *archive.Request, a, b float64) float64 {
	switch {
	case s.kind == shapeNone:
		return 0
	case s.chunked:
		if s.done < a || s.first > b {
			return 0
		}
		tok := 0.0
		for k := range r.TokenTimes {
			if t := s.chunkTime(r, k); t >= a && t <= b {
				tok += s.chunkWeight(r, k)
			}
		}
		return tok
	case s.kind == shapeZeroLen:
		if s.first >= a && s.first <= b {
			return s.tokens
		}
		return 0
	}
	lo, hi := max(s.first, a), min(s.done, b)
	if hi <= lo {
		return 0
	}
	if lo == s.first && hi == s.done {
		return s.tokens
	}
	return s.tokens * (hi - lo) / (s.done - s.first)
}
