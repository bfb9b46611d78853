package measure

import (
	"math"
	"unsafe"
)

// A request's segments are held in fewer numbers than their three each,
// exactly (bit for bit): chunkSegments makes them touch (each starts
// where the one before ended, the first at first_token_at), so their
// ends alone place them, and with one token per chunk every segment but
// the last holds the same tokens, so two numbers hold them all. A
// million requests of 8 segments hold 10 numbers each (80 bytes) instead
// of 24 (192), in arenas without pointers, which the collector need not
// scan.
const (
	// segLinked: the segments touch; enc holds their ends only, each
	// start being the end before (the first's, first).
	segLinked = 1 << iota
	// segSameTokens: every segment but the last holds the same tokens;
	// enc holds those and the last's, not one per segment.
	segSameTokens
)

// setSegments holds segs (at most maxSegments, each a < b) in s, in
// memory taken from ar (its own when ar is nil).
func (s *tokenShape) setSegments(segs []segment, ar *floatArena) {
	n := len(segs)
	s.nSeg, s.layout, s.enc = uint8(n), 0, nil
	if n == 0 {
		return
	}
	linked, same := sameBits(segs[0].a, s.first), n >= 3
	for k := 1; k < n; k++ {
		linked = linked && sameBits(segs[k].a, segs[k-1].b)
		same = same && (k == n-1 || sameBits(segs[k].tokens, segs[0].tokens))
	}
	if linked {
		s.layout |= segLinked
	}
	if same {
		s.layout |= segSameTokens
	}
	enc := ar.take(s.encLen())
	at := 0
	if !linked {
		for _, sg := range segs {
			enc[at] = sg.a
			at++
		}
	}
	for _, sg := range segs {
		enc[at] = sg.b
		at++
	}
	if same {
		enc[at], enc[at+1] = segs[0].tokens, segs[n-1].tokens
	} else {
		for _, sg := range segs {
			enc[at] = sg.tokens
			at++
		}
	}
	s.enc = &enc[0]
}

// encLen is how many numbers s's segments are held in: 3 a segment, less
// the starts when they touch, less all tokens but two when they are the
// same.
func (s *tokenShape) encLen() int {
	n := int(s.nSeg)
	size := 3 * n
	if s.layout&segLinked != 0 {
		size -= n
	}
	if s.layout&segSameTokens != 0 {
		size -= n - 2
	}
	return size
}

// numbers is the numbers s's segments are held in. The shape keeps only
// a pointer to the first (8 bytes, where a slice would take 24): their
// count follows from nSeg and layout (encLen). The pointer keeps the
// whole arena chunk alive, as a slice of it would.
func (s *tokenShape) numbers() []float64 {
	if s.enc == nil {
		return nil
	}
	return unsafe.Slice(s.enc, s.encLen())
}

// sameBits reports whether x and y are the same float64, bit for bit.
func sameBits(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }

// nSegments is how many segments s has.
func (s *tokenShape) nSegments() int { return int(s.nSeg) }

// segment is s's k-th segment (0 ≤ k < nSegments), as setSegments was
// given it.
func (s *tokenShape) segment(k int) segment {
	n, enc := int(s.nSeg), s.numbers()
	var sg segment
	ends := 0 // where the ends start in enc
	if s.layout&segLinked != 0 {
		sg.a = s.first
		if k > 0 {
			sg.a = enc[k-1]
		}
	} else {
		sg.a, ends = enc[k], n
	}
	sg.b = enc[ends+k]
	toks := ends + n
	switch {
	case s.layout&segSameTokens == 0:
		sg.tokens = enc[toks+k]
	case k == n-1:
		sg.tokens = enc[toks+1]
	default:
		sg.tokens = enc[toks]
	}
	return sg
}

// floatArena hands out float64s from chunks of arenaChunk, so that
// a million requests' segments are some hundreds of allocations rather
// than a million. A chunk is kept while any of its numbers is.
type floatArena struct{ chunk []float64 }

// arenaChunk is the numbers of an arena's chunk (256 KiB).
const arenaChunk = 1 << 15

// take returns n numbers of a's memory (n of their own when a is nil).
func (a *floatArena) take(n int) []float64 {
	if a == nil {
		return make([]float64, n)
	}
	if cap(a.chunk)-len(a.chunk) < n {
		a.chunk = make([]float64, 0, max(arenaChunk, n))
	}
	l := len(a.chunk)
	a.chunk = a.chunk[:l+n]
	return a.chunk[l : l+n : l+n]
}
