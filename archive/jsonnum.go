package archive

import (
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
// this is the one number parser that must be fast. Up to 19 significant
// digits are read into an integer mantissa m, with a power of ten p:
//   - m ≤ 2^53 and |p| ≤ 22 (Clinger's fast path): m and 10^|p| are exact
//     float64 values, so one float64 multiplication or division, rounded
//     once, is the correctly rounded result.
//   - -19 ≤ p < 0 (a Unix time with 17 digits, m above 2^53): m·2^s / 10^-p
//     in 128-bit integer division gives a 63- or 64-bit quotient and a
//     remainder; rounding the quotient to 53 bits, to nearest even, with the
//     remainder as the sticky bit, is the correctly rounded result.
//   - 0 ≤ p ≤ 19: m·10^p is an exact 128-bit integer, rounded likewise.
//
// Anything else (more than 19 significant digits, larger exponents) is
// left to strconv.ParseFloat.
func parseNumber(b []byte, i int) (v float64, next int, ok bool) {
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

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// pow10 holds the powers of ten that float64 represents exactly, and
// pow10u those that a uint64 holds.
var (
	pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
		1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
	pow10u = [...]uint64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
		1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}
)

// decimalToFloat returns m·10^p correctly rounded, when one of the exact
// ways of parseNumber applies (false: use strconv).
func decimalToFloat(m uint64, p int) (float64, bool) {
	switch {
	case m == 0:
		return 0, true
	case m <= 1<<53 && p >= -22 && p <= 22:
		if p < 0 {
			return float64(m) / pow10[-p], true
		}
		return float64(m) * pow10[p], true
	case p < 0 && p >= -19:
		d := pow10u[-p]
		s := uint(63 + bits.Len64(d) - bits.Len64(m)) // quotient in (2^62, 2^64)
		var hi, lo uint64
		if s >= 64 {
			hi = m << (s - 64)
		} else {
			hi, lo = m>>(64-s), m<<s // s ≥ 1: Len64(d) ≥ 4 for d ≥ 10
		}
		q, r := bits.Div64(hi, lo, d)
		return roundFloat(0, q, r != 0, -int(s))
	case p >= 0 && p <= 19:
		hi, lo := bits.Mul64(m, pow10u[p])
		return roundFloat(hi, lo, false, 0)
	}
	return 0, false
}

// roundFloat returns (hi·2^64 + lo + ε)·2^e rounded to the nearest float64
// (ties to even), where ε is a fraction in (0, 1) when sticky and 0
// otherwise; false when the result would not be a normal float64.
func roundFloat(hi, lo uint64, sticky bool, e int) (float64, bool) {
	n := 128 - bits.LeadingZeros64(hi)
	if hi == 0 {
		n = bits.Len64(lo)
	}
	var mant uint64
	if n <= 53 {
		if sticky {
			return 0, false // not reached by decimalToFloat
		}
		z := uint(53 - n) // exact: shift left into [2^52, 2^53)
		mant, e = lo<<z, e-int(z)
	} else {
		shift := uint(n - 53) // 1 ≤ shift ≤ 75
		mant = shr128(hi, lo, shift)
		roundBit := bit128(hi, lo, shift-1)
		below := sticky || lowBits128(hi, lo, shift-1)
		if roundBit && (below || mant&1 == 1) {
			mant++
			if mant == 1<<53 {
				mant >>= 1
				shift++
			}
		}
		e += int(shift)
	}
	exp := e + 52 // mant·2^e = (mant/2^52)·2^(e+52), mant in [2^52, 2^53)
	if exp < -1022 || exp > 1023 {
		return 0, false
	}
	return math.Float64frombits(uint64(exp+1023)<<52 | mant&(1<<52-1)), true
}

// shr128 returns the low 64 bits of (hi·2^64 + lo) >> k, 0 < k < 128.
func shr128(hi, lo uint64, k uint) uint64 {
	if k < 64 {
		return lo>>k | hi<<(64-k)
	}
	return hi >> (k - 64)
}

// bit128 returns bit k of hi·2^64 + lo.
func bit128(hi, lo uint64, k uint) bool {
	if k < 64 {
		return lo>>k&1 == 1
	}
	return hi>>(k-64)&1 == 1
}

// lowBits128 says whether any of bits 0..k-1 of hi·2^64 + lo is set.
func lowBits128(hi, lo uint64, k uint) bool {
	if k <= 64 {
		return lo&(1<<k-1) != 0 // 1<<64 is 0: every bit of lo
	}
	return lo != 0 || hi&(1<<(k-64)-1) != 0
}
