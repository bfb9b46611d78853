package measure

import (
	"math"
	"testing"
)

// segs is every segment of s (tests).
func (s *tokenShape) segs() []segment {
	out := make([]segment, s.nSegments())
	for k := range out {
		out[k] = s.segment(k)
	}
	return out
}

// TestSegmentsHeldExactly gives setSegments lists of each layout and
// reads them back bit for bit, with the numbers each layout holds
// counted by hand.
func TestSegmentsHeldExactly(t *testing.T) {
	const first = 1_700_000_000.123456789
	next := math.Nextafter(first, math.Inf(1))
	tests := []struct {
		name   string
		segs   []segment
		layout uint8
		nums   int // numbers held: worked out from the layout
	}{
		{"none", nil, 0, 0},
		// one segment from first: its end and its tokens.
		{"uniform", []segment{{first, first + 5, 200}}, segLinked, 2},
		// two touching: 2 ends + 2 tokens (same tokens needs 3 or more).
		{"two linked", []segment{{first, first + 1, 25}, {first + 1, first + 2, 25}}, segLinked, 4},
		// 8 touching, 25 tokens each but the last's 25.000000000000004:
		// 8 ends + 2 tokens.
		{"eight linked same tokens", eight(first, 25, 25.000000000000004), segLinked | segSameTokens, 10},
		// the same with the sixth's tokens one ulp off: 8 ends + 8 tokens.
		{"eight linked, one ulp off", func() []segment {
			s := eight(first, 25, 25)
			s[5].tokens = math.Nextafter(25, 30)
			return s
		}(), segLinked, 16},
		// the first starting one ulp after first: 3 numbers each.
		{"first not at first", []segment{{next, first + 1, 3}, {first + 1, first + 2, 4}}, 0, 6},
		// a gap between the second and third: starts, ends, same tokens.
		{"gap", []segment{{first, first + 1, 7}, {first + 1, first + 2, 7}, {first + 3, first + 4, 1}}, segSameTokens, 8},
		// -0 and +0 are the same number but not the same bits.
		{"signed zero", []segment{{0, 1, 2}}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tokenShape{kind: shapeGen, first: first}
			if tt.name == "signed zero" {
				s.first = math.Copysign(0, -1)
			}
			var ar floatArena
			s.setSegments(tt.segs, &ar)
			if s.layout != tt.layout || len(s.numbers()) != tt.nums {
				t.Errorf("layout %b holding %d numbers, want %b holding %d", s.layout, len(s.numbers()), tt.layout, tt.nums)
			}
			got := s.segs()
			if len(got) != len(tt.segs) {
				t.Fatalf("%d segments back, want %d", len(got), len(tt.segs))
			}
			for k := range got {
				g, w := got[k], tt.segs[k]
				if !sameBits(g.a, w.a) || !sameBits(g.b, w.b) || !sameBits(g.tokens, w.tokens) {
					t.Errorf("segment %d: %+v, want %+v", k, g, w)
				}
			}
		})
	}
}

// eight is 8 touching segments from first, a second each, of tok tokens
// but the last's last.
func eight(first, tok, last float64) []segment {
	s := make([]segment, 8)
	for k := range s {
		s[k] = segment{a: first + float64(k), b: first + float64(k+1), tokens: tok}
		if k > 0 {
			s[k].a = s[k-1].b
		}
	}
	s[7].tokens = last
	return s
}

// TestArenaChunks: numbers from one arena share a chunk until it is full,
// and a request's numbers never straddle two.
func TestArenaChunks(t *testing.T) {
	var ar floatArena
	a := ar.take(10)
	b := ar.take(10)
	if &a[:cap(a)][0] == &b[0] || cap(a) != 10 {
		t.Fatalf("a slice of cap %d shared with the next", cap(a))
	}
	if &ar.chunk[0] != &a[0] {
		t.Error("the first take is not the chunk's start")
	}
	ar.take(arenaChunk - 25) // 5 left
	c := ar.take(6)
	if len(ar.chunk) != 6 || &ar.chunk[0] != &c[0] {
		t.Error("6 numbers did not start a new chunk where 5 were left")
	}
	if got := (*floatArena)(nil).take(3); len(got) != 3 {
		t.Errorf("nil arena gave %d numbers", len(got))
	}
}
