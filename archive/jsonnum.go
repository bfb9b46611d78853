package archive

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// parseNumber parses the JSON number (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?
// ([eE][+-]?[0-9]+)?) at b[i:] and returns its value as float64, correctly
// rounded (the value strconv.ParseFloat gives, and so encoding/json), and
// the index after it. ok is false when b[i:] does not start with a JSON
// number or the number is out of the float64 range.
//
// The token times of requests.jsonl are most of an archive's bytes, so
// this is the one number parser that must be fast. A token time of this
// era (ten integer digits, up to eight fraction digits) takes a way of its
// own, parseUnixTime, when the line has room after it. Otherwise up to 19 significant
// digits are read into an integer mantissa m, with a power of ten p; then,
// as strconv.ParseFloat does (without its string conversion and its
// general cases):
//   - m ≤ 2^53 and |p| ≤ 22 (Clinger's fast path): m and 10^|p| are exact
//     float64 values, so one float64 multiplication or division, rounded
//     once, is the correctly rounded result;
//   - else, |p| ≤ 22 (a Unix time with 17 digits: m above 2^53):
//     Eisel–Lemire, m times a 128-bit approximation of 10^p, which gives
//     the correctly rounded result or says it cannot tell (rarely);
//   - else, or when it cannot tell: strconv.ParseFloat.
func parseNumber(b []byte, i int) (v float64, next int, ok bool) {
	var last lastSecond
	return parseNumberAfter(b, i, &last)
}

// parseNumberAfter is parseNumber for a run of numbers, token times of
// which many fall in one second: last holds the integer part of the last
// time parsed the fast way (and is updated), so that it is not read again.
func parseNumberAfter(b []byte, i int, last *lastSecond) (v float64, next int, ok bool) {
	if len(b)-i >= fastRoom {
		if v, next, ok := parseUnixTime(b, i, last); ok {
			return v, next, true
		}
	}
	start := i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	if i == len(b) {
		return 0, 0, false
	}
	var m uint64
	nd := 0       // significant digits in m
	p := 0        // power of ten
	exact := true // no non-zero digit was left out of m
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for len(b)-i >= 8 && nd <= 19-8 { // eight digits at a time while m has room
			v, ok := eightDigits(b[i:])
			if !ok {
				break
			}
			m, nd, i = m*1e8+v, nd+8, i+8
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
			if nd < 19 {
				m = m*10 + uint64(b[i]-'0')
				nd++
			} else {
				p++
				exact = exact && b[i] == '0'
			}
		}
	default:
		return 0, 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) || !isDigit(b[i]) {
			return 0, 0, false
		}
		for m != 0 && len(b)-i >= 8 && nd <= 19-8 { // past leading zeros, every digit counts
			v, ok := eightDigits(b[i:])
			if !ok {
				break
			}
			m, nd, p, i = m*1e8+v, nd+8, p-8, i+8
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
			if nd < 19 {
				m = m*10 + uint64(b[i]-'0')
				p--
				if m != 0 {
					nd++
				}
			} else {
				exact = exact && b[i] == '0'
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) || !isDigit(b[i]) {
			return 0, 0, false
		}
		e := 0
		for ; i < len(b) && isDigit(b[i]); i++ {
			if e < 100_000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		p += e
	}
	if exact {
		if v, ok := decimalToFloat(m, p); ok {
			if neg {
				v = -v
			}
			return v, i, true
		}
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, 0, false
	}
	return v, i, true
}

// lastSecond is the integer part of the last token time parseUnixTime
// read: its first eight digits and the next two as loaded, and its value.
// The zero value matches no number (digits are not zero bytes).
type lastSecond struct {
	w1 uint64
	w2 uint16
	ip uint64
}

// fastRoom is the room parseUnixTime needs after a number's start: its
// eight-byte loads reach 19 bytes in.
const fastRoom = 24

// parseUnixTime parses the numbers most of an archive's bytes are, token
// times: Unix seconds of this era, ten integer digits between 2^30 and
// 2^31 (2004 to 2038) and a fraction of one to eight digits, no exponent
// (IIIIIIIIII.F{1,8}). false: another shape, for the general way. b must
// have fastRoom bytes from i.
//
// The float64 values in [2^30, 2^31] are the multiples of 2^-22, so the
// one nearest I + F/10^n is I + q/2^22 with q = F·2^22/10^n rounded to
// nearest, exactly: the division is exact in integers (F·2^22 < 2^49),
// there are no ties (a fraction halfway between two multiples of 2^-22
// has 23 digits), and the sum, a multiple of 2^-22 of at most 2^31, is a
// float64. The digits are read eight at
// a time: two loads for the integer part, one for the fraction.
func parseUnixTime(b []byte, i int, last *lastSecond) (float64, int, bool) {
	w1 := binary.LittleEndian.Uint64(b[i:])
	w2 := binary.LittleEndian.Uint64(b[i+8:])
	var ip uint64
	if w1 == last.w1 && uint16(w2) == last.w2 && byte(w2>>16) == '.' {
		ip = last.ip // the same ten digits as the last time: checked then
	} else {
		// w2 starts with two digits and a '.': its low three bytes are
		// 0x3[0-9], 0x3[0-9], '.'.
		if digitPrefix(w1) != 8 || w2&0xFFF0F0 != 0x2E3030 || digitPrefix(w2|0xFFFFFFFFFF0000) != 2 {
			return 0, 0, false
		}
		ip = digitsValue(w1, 8)*100 + (w2&0xF)*10 + (w2>>8)&0xF
		if ip < 1<<30 || ip >= 1<<31 {
			return 0, 0, false
		}
		*last = lastSecond{w1: w1, w2: uint16(w2), ip: ip}
	}
	w3 := binary.LittleEndian.Uint64(b[i+11:])
	n := digitPrefix(w3)
	if n == 0 || n == 8 && isDigit(b[i+19]) {
		return 0, 0, false // "I." or a fraction of nine digits or more
	}
	end := i + 11 + n
	if c := b[end]; c == 'e' || c == 'E' {
		return 0, 0, false
	}
	x := digitsValue(w3, n) << 22
	// q = x/10^n, as a multiplication (see divPow10), and r the remainder;
	// q rounded to nearest: up when r > 10^n/2 (never exactly half: that
	// would take 23 fraction digits), without a branch.
	hi, _ := bits.Mul64(x, divPow10[n].m)
	q := hi >> divPow10[n].s
	half := pow10u[n] / 2
	r := x - q*pow10u[n]
	q += (half - r) >> 63
	return float64(int64(ip)) + float64(int64(q))*(1.0/(1<<22)), end, true
}

// divPow10[n] divides by 10^n, for n from 1 to 8, a dividend x below
// 10^n·2^22: x/10^n = hi(x·m)>>s, with m = floor(2^(64+s)/10^n)+1 and
// s = floor(log2(10^n)). Exact: x·m/2^(64+s) exceeds x/10^n by
// x·e/(10^n·2^(64+s)) with e = m·10^n - 2^(64+s) ≤ 10^n, less than
// 1/10^n as long as x·10^n < 2^(64+s), which holds as 10^(2n)·2^22 <
// 10^n·2^63. TestDivPow10 checks it.
var divPow10 = [...]struct {
	m uint64
	s uint
}{
	{}, // n = 0: not used
	{0xcccccccccccccccd, 3},
	{0xa3d70a3d70a3d70b, 6},
	{0x83126e978d4fdf3c, 9},
	{0xd1b71758e219652c, 13},
	{0xa7c5ac471b478424, 16},
	{0x8637bd05af6c69b6, 19},
	{0xd6bf94d5e57a42bd, 23},
	{0xabcc77118461cefd, 26},
}

var pow10u = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// digitPrefix returns how many of the eight bytes in w (read little
// endian: b[0] is the low byte) are decimal digits before the first that
// is not (8 when all are). A byte is a digit when its high nibble is 3 and
// adding 6 leaves it 3; the addition carries into the next byte only from
// a byte 0xFA or above, which is no digit and comes first.
func digitPrefix(w uint64) int {
	t := (w & 0xF0F0F0F0F0F0F0F0) | ((w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4
	return bits.TrailingZeros64(t^0x3333333333333333) >> 3
}

// digitsValue returns the value of the first k (1 to 8) bytes of w, all
// digits: they are moved to the top of the word, with '0's before them,
// and the eight are read at once.
func digitsValue(w uint64, k int) uint64 {
	w = w<<(8*(8-k)) | 0x3030303030303030>>(8*k)
	w -= 0x3030303030303030
	w = (w * 10) + (w >> 8)
	return ((w&0x000000FF000000FF)*(100+(1000000<<32)) + (w>>16&0x000000FF000000FF)*(1+(10000<<32))) >> 32
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// eightDigits returns the value of b[:8] when those bytes are all decimal
// digits, read at once (the SWAR technique of simdjson and fast_float:
// Lemire, "Number parsing at a gigabyte per second", 2021). It is
// digitPrefix(v) == 8 and digitsValue(v, 8) written out, so that it stays
// small enough to inline in parseNumber's digit loops (calling the two
// makes it too large: 26 -> 28 ns a number).
func eightDigits(b []byte) (uint64, bool) {
	v := binary.LittleEndian.Uint64(b)
	// Each byte is 0x30..0x39: its high nibble is 3, and adding 6 does
	// not carry into it.
	if (v&0xF0F0F0F0F0F0F0F0)|((v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
		return 0, false
	}
	v -= 0x3030303030303030
	v = (v * 10) + (v >> 8) // pairs of digits in the even bytes
	v = ((v&0x000000FF000000FF)*(100+(1000000<<32)) + (v>>16&0x000000FF000000FF)*(1+(10000<<32))) >> 32
	return v, true
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// decimalToFloat returns m·10^p correctly rounded, when one of the exact
// ways of parseNumber applies (false: use strconv).
func decimalToFloat(m uint64, p int) (float64, bool) {
	switch {
	case m == 0:
		return 0, true
	case p < -22 || p > 22:
		return 0, false
	case m <= 1<<53:
		if p < 0 {
			return float64(m) / pow10[-p], true
		}
		return float64(m) * pow10[p], true
	}
	return eiselLemire(m, p)
}

// eiselLemire is the Eisel–Lemire algorithm as strconv implements it
// (internal/strconv/atofeisel.go of Go 1.26, BSD license): m·10^p for
// m > 0 and |p| ≤ 22, correctly rounded, or false when the 128-bit
// product is too close to a halfway point to tell.
func eiselLemire(m uint64, p int) (float64, bool) {
	pow := pow10x128[p+22]
	exp2 := 1 + (p*108853)>>15 // 1 + floor(p·log2(10)) for |p| ≤ 500
	clz := bits.LeadingZeros64(m)
	m <<= uint(clz)
	retExp2 := uint64(exp2+63+1023) - uint64(clz) // biased exponent
	xHi, xLo := bits.Mul64(m, pow[0])
	if xHi&0x1FF == 0x1FF && xLo+m < m {
		yHi, yLo := bits.Mul64(m, pow[1])
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+m < m {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	msb := xHi >> 63
	mant := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	if xLo == 0 && xHi&0x1FF == 0 && mant&3 == 1 {
		return 0, false // halfway
	}
	mant += mant & 1
	mant >>= 1
	if mant>>53 > 0 {
		mant >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 {
		return 0, false // subnormal, infinite
	}
	return math.Float64frombits(retExp2<<52 | mant&(1<<52-1)), true
}

// pow10x128 holds 10^p for -22 ≤ p ≤ 22 as 128-bit mantissas {high, low},
// rounded down, scaled so that the top bit is set (10^p = mantissa/2^128 ·
// 2^(1+floor(p·log2(10)))); from Go's internal/strconv/pow10tab.go, and
// checked against math/big by TestPow10x128.
var pow10x128 = [...][2]uint64{
	{0xf1c90080baf72cb1, 0x5324c68b12dd6338}, // 1e-22 * 2**201
	{0x971da05074da7bee, 0xd3f6fc16ebca5e03}, // 1e-21 * 2**197
	{0xbce5086492111aea, 0x88f4bb1ca6bcf584}, // 1e-20 * 2**194
	{0xec1e4a7db69561a5, 0x2b31e9e3d06c32e5}, // 1e-19 * 2**191
	{0x9392ee8e921d5d07, 0x3aff322e62439fcf}, // 1e-18 * 2**187
	{0xb877aa3236a4b449, 0x09befeb9fad487c2}, // 1e-17 * 2**184
	{0xe69594bec44de15b, 0x4c2ebe687989a9b3}, // 1e-16 * 2**181
	{0x901d7cf73ab0acd9, 0x0f9d37014bf60a10}, // 1e-15 * 2**177
	{0xb424dc35095cd80f, 0x538484c19ef38c94}, // 1e-14 * 2**174
	{0xe12e13424bb40e13, 0x2865a5f206b06fb9}, // 1e-13 * 2**171
	{0x8cbccc096f5088cb, 0xf93f87b7442e45d3}, // 1e-12 * 2**167
	{0xafebff0bcb24aafe, 0xf78f69a51539d748}, // 1e-11 * 2**164
	{0xdbe6fecebdedd5be, 0xb573440e5a884d1b}, // 1e-10 * 2**161
	{0x89705f4136b4a597, 0x31680a88f8953030}, // 1e-9 * 2**157
	{0xabcc77118461cefc, 0xfdc20d2b36ba7c3d}, // 1e-8 * 2**154
	{0xd6bf94d5e57a42bc, 0x3d32907604691b4c}, // 1e-7 * 2**151
	{0x8637bd05af6c69b5, 0xa63f9a49c2c1b10f}, // 1e-6 * 2**147
	{0xa7c5ac471b478423, 0x0fcf80dc33721d53}, // 1e-5 * 2**144
	{0xd1b71758e219652b, 0xd3c36113404ea4a8}, // 1e-4 * 2**141
	{0x83126e978d4fdf3b, 0x645a1cac083126e9}, // 1e-3 * 2**137
	{0xa3d70a3d70a3d70a, 0x3d70a3d70a3d70a3}, // 1e-2 * 2**134
	{0xcccccccccccccccc, 0xcccccccccccccccc}, // 1e-1 * 2**131
	{0x8000000000000000, 0x0000000000000000}, // 1e0 * 2**127
	{0xa000000000000000, 0x0000000000000000}, // 1e1 * 2**124
	{0xc800000000000000, 0x0000000000000000}, // 1e2 * 2**121
	{0xfa00000000000000, 0x0000000000000000}, // 1e3 * 2**118
	{0x9c40000000000000, 0x0000000000000000}, // 1e4 * 2**114
	{0xc350000000000000, 0x0000000000000000}, // 1e5 * 2**111
	{0xf424000000000000, 0x0000000000000000}, // 1e6 * 2**108
	{0x9896800000000000, 0x0000000000000000}, // 1e7 * 2**104
	{0xbebc200000000000, 0x0000000000000000}, // 1e8 * 2**101
	{0xee6b280000000000, 0x0000000000000000}, // 1e9 * 2**98
	{0x9502f90000000000, 0x0000000000000000}, // 1e10 * 2**94
	{0xba43b74000000000, 0x0000000000000000}, // 1e11 * 2**91
	{0xe8d4a51000000000, 0x0000000000000000}, // 1e12 * 2**88
	{0x9184e72a00000000, 0x0000000000000000}, // 1e13 * 2**84
	{0xb5e620f480000000, 0x0000000000000000}, // 1e14 * 2**81
	{0xe35fa931a0000000, 0x0000000000000000}, // 1e15 * 2**78
	{0x8e1bc9bf04000000, 0x0000000000000000}, // 1e16 * 2**74
	{0xb1a2bc2ec5000000, 0x0000000000000000}, // 1e17 * 2**71
	{0xde0b6b3a76400000, 0x0000000000000000}, // 1e18 * 2**68
	{0x8ac7230489e80000, 0x0000000000000000}, // 1e19 * 2**64
	{0xad78ebc5ac620000, 0x0000000000000000}, // 1e20 * 2**61
	{0xd8d726b7177a8000, 0x0000000000000000}, // 1e21 * 2**58
	{0x878678326eac9000, 0x0000000000000000}, // 1e22 * 2**54
}
