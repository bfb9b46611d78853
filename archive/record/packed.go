package record

import (
	"encoding/binary"
	"iter"
	"math"
)

// A long run's token times are most of its memory (issue 46: 200 a
// request, 1.6 GB as float64 at a million requests). A reader that
// evaluates a run (analyze) packs each request's TokenTimes: the count,
// then each time's IEEE 754 bits as the difference from the previous
// time's bits (the first from 0), zig-zag encoded as a varint. The
// difference of two times of one binade is their distance in units of
// the last place (2^-22 s for a Unix time of this era), so a gap of 20 ms
// takes 3 bytes; any float64 (NaN, infinities, times out of order)
// round-trips bit for bit, since the differences are of int64 bits,
// wrapping. Code that reads token times from a run that may be packed
// calls TokenTimesLen and AppendTokenTimes (or Times) instead of reading
// the field.

// PackTokenTimes packs r's TokenTimes into the end of buf (which it
// returns, grown as needed) and sets TokenTimes to nil; r's packed times
// share buf's array, capped at their length. A request without token
// times is left as it is.
func (r *Request) PackTokenTimes(buf []byte) []byte {
	if len(r.TokenTimes) == 0 {
		return buf
	}
	start := len(buf)
	buf = binary.AppendUvarint(buf, uint64(len(r.TokenTimes)))
	prev := uint64(0)
	for _, t := range r.TokenTimes {
		b := math.Float64bits(t)
		buf = binary.AppendVarint(buf, int64(b-prev))
		prev = b
	}
	r.packedTimes = buf[start:len(buf):len(buf)]
	r.TokenTimes = nil
	return buf
}

// TokenTimesPacked reports whether r's token times are packed.
func (r *Request) TokenTimesPacked() bool { return r.packedTimes != nil }

// TokenTimesLen is the number of r's token times, packed or not.
func (r *Request) TokenTimesLen() int {
	if r.packedTimes == nil {
		return len(r.TokenTimes)
	}
	n, _ := binary.Uvarint(r.packedTimes)
	return int(n)
}

// AppendTokenTimes appends r's token times, packed or not, to dst.
func (r *Request) AppendTokenTimes(dst []float64) []float64 {
	if r.packedTimes == nil {
		return append(dst, r.TokenTimes...)
	}
	n, k := binary.Uvarint(r.packedTimes)
	p := r.packedTimes[k:]
	prev := uint64(0)
	for range n {
		d, k := binary.Varint(p)
		p = p[k:]
		prev += uint64(d)
		dst = append(dst, math.Float64frombits(prev))
	}
	return dst
}

// TokenTimesAll yields r's token times with their indices, packed or
// not, without making a list of them.
func (r *Request) TokenTimesAll() iter.Seq2[int, float64] {
	return func(yield func(int, float64) bool) {
		if r.packedTimes == nil {
			for i, t := range r.TokenTimes {
				if !yield(i, t) {
					return
				}
			}
			return
		}
		n, k := binary.Uvarint(r.packedTimes)
		p := r.packedTimes[k:]
		prev := uint64(0)
		for i := range int(n) {
			d, k := binary.Varint(p)
			p = p[k:]
			prev += uint64(d)
			if !yield(i, math.Float64frombits(prev)) {
				return
			}
		}
	}
}

// Times returns r's token times: the field itself when they are not
// packed, else unpacked into buf (reused from its start when it has
// room, for a caller that reads one request after another).
func (r *Request) Times(buf []float64) []float64 {
	if r.packedTimes == nil {
		return r.TokenTimes
	}
	return r.AppendTokenTimes(buf[:0])
}

// LastTokenTime is r's last token time (false when it has none).
func (r *Request) LastTokenTime() (float64, bool) {
	if r.packedTimes == nil {
		if n := len(r.TokenTimes); n > 0 {
			return r.TokenTimes[n-1], true
		}
		return 0, false
	}
	last, ok := 0.0, false
	for _, t := range r.TokenTimesAll() {
		last, ok = t, true
	}
	return last, ok
}

// UnpackTokenTimes sets TokenTimes from the packed times, if packed, for
// code that reads the field (a formula that reads token_times).
func (r *Request) UnpackTokenTimes() {
	if r.packedTimes != nil {
		r.TokenTimes = r.AppendTokenTimes(make([]float64, 0, r.TokenTimesLen()))
		r.packedTimes = nil
	}
}

// UnpackTokenTimes unpacks the token times of every request of the run.
func (r *Run) UnpackTokenTimes() {
	for i := range r.Requests {
		r.Requests[i].UnpackTokenTimes()
	}
}
