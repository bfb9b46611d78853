// Package jsonenc appends JSON values byte for byte as encoding/json writes
// them, without reflection, for the paths that write JSON per request or
// per token: the request bodies of the load generator and the lines of
// requests.jsonl.
package jsonenc

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// String appends s quoted as encoding/json quotes a string: control
// characters as \u00XX (but \b, \f, \n, \r, \t), invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped, and, when escapeHTML is set (json.Marshal;
// an Encoder with SetEscapeHTML(false) clears it), <, > and & as \u00XX.
func String(dst []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Float appends f as encoding/json writes a float64: the shortest decimal
// that reads back as f, in %f form for magnitudes in [1e-6, 1e21) and in
// %e form (with at least two exponent digits dropped to one, e-7 not e-07)
// outside. NaN and infinities are an error, as in encoding/json.
//
// A Unix time of this era (seconds in [2^30, 2^31), 2004 to 2038) takes
// a fast way of its own, with the same result: see unixSeconds.
func Float(dst []byte, f float64) ([]byte, error) {
	if b, ok := unixSeconds(dst, f); ok {
		return b, nil
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// The float64 values in [2^30, 2^31) all have the binary exponent 30: they
// are the integers of [2^52, 2^53) times 2^-22, one every 2^-22 s (238 ns).
const (
	unixBits     = (1023 + 30) << 52 // sign and biased exponent of [2^30, 2^31)
	fracBits     = 52 - 30           // bits of the fraction of a second
	fracOne      = 1 << fracBits     // one second, in units of 2^-22 s
	maxFracDigit = 7                 // 10^7 > 2^22: seven digits always suffice
)

// unixSeconds appends f in the shortest decimal that reads back as f, as
// strconv.FormatFloat(f, 'f', -1, 64) does, when f lies in (2^30, 2^31):
// false otherwise, and in the rare case it leaves to strconv.
//
// f is ip + m/2^22 with an integer part ip of ten digits and m < 2^22.
// Every decimal within half a step (2^-23) of f reads back as f; at the
// ends of that interval, only when f's mantissa is even (reading rounds
// half to even). With ip fixed (the interval holds no integer when m ≠ 0),
// the shortest such decimal is the one with the fewest fraction digits n:
// the nearest n-digit fraction d/10^n of the fewest digits n that lies
// within the interval is strconv's answer, its closest of that length. In integers: q = m·10^n, d = q/2^22 rounded, r = |d·2^22 - q|,
// and d/10^n is within the interval when 2r ≤ 10^n. A fraction exactly
// halfway between two n-digit neighbours (r = 2^21) is left to strconv.
// The multiplications stay below 2^22·10^7 < 2^46.
func unixSeconds(dst []byte, f float64) ([]byte, bool) {
	ip, d, n, ok := unixParts(f)
	if !ok {
		return dst, false
	}
	t := tenDigits(ip)
	return appendFraction(append(dst, t[:]...), d, n), true
}

// unixParts returns the integer part ip of f and its shortest fraction
// d/10^n (n = 0 when f is whole), for unixSeconds; false when f is not
// in (2^30, 2^31) or is left to strconv.
func unixParts(f float64) (ip, d uint64, n int, ok bool) {
	b := math.Float64bits(f)
	if b&^(1<<52-1) != unixBits || b&(1<<52-1) == 0 {
		// Outside [2^30, 2^31), or 2^30 itself (whose lower neighbour
		// is nearer than its upper one).
		return 0, 0, 0, false
	}
	full := b&(1<<52-1) | 1<<52
	ip, m := full>>fracBits, full&(fracOne-1)
	if m == 0 {
		return ip, 0, 0, true
	}
	// Within the interval at n digits means within at n+1 (append a
	// zero), so the search goes down from seven digits, which always do,
	// and stops at the first length that does not.
	even := m&1 == 0
	n = maxFracDigit
	d, r := nearestFraction(m, n)
	for n > 1 {
		dn, rn := nearestFraction(m, n-1)
		if 2*rn > fracPow10[n-1] || 2*rn == fracPow10[n-1] && !even {
			break
		}
		n, d, r = n-1, dn, rn
	}
	if r == fracOne/2 {
		return 0, 0, 0, false // halfway between two n-digit fractions
	}
	return ip, d, n, true
}

// Floats appends vs as encoding/json writes the elements of a []float64,
// separated by commas (without the brackets). Unix times of this era
// take unixSeconds's way, and the ten digits of their integer part are
// formatted once for a run of times in the same second.
func Floats(dst []byte, vs []float64) ([]byte, error) {
	var ipText [10]byte
	lastIP := uint64(0)
	for i, f := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		ip, d, n, ok := unixParts(f)
		if !ok {
			var err error
			if dst, err = Float(dst, f); err != nil {
				return dst, err
			}
			continue
		}
		if ip != lastIP {
			ipText, lastIP = tenDigits(ip), ip
		}
		dst = appendFraction(append(dst, ipText[:]...), d, n)
	}
	return dst, nil
}

// tenDigits returns the ten decimal digits of ip (2^30 ≤ ip < 2^31).
func tenDigits(ip uint64) [10]byte {
	var t [10]byte
	binary.LittleEndian.PutUint64(t[:8], eightDigits(ip/100))
	lo := ip % 100
	t[8], t[9] = digitPairs[2*lo], digitPairs[2*lo+1]
	return t
}

// appendFraction appends "." and the n digits of d/10^n (d < 10^n,
// n ≤ 8), or nothing when n is 0.
func appendFraction(dst []byte, d uint64, n int) []byte {
	if n == 0 {
		return dst
	}
	var t [9]byte
	binary.LittleEndian.PutUint64(t[1:], eightDigits(d))
	// The eight digits of d begin with 8-n zeros: the point goes before
	// the last n.
	t[8-n] = '.'
	return append(dst, t[8-n:]...)
}

// eightDigits returns the eight decimal digits of x < 10^8, zero-padded,
// as ASCII bytes in a word, the first digit in the low byte (little
// endian: the order they are written in), computed in the word's lanes
// at once: x splits into two four-digit halves (32-bit lanes), each into
// two pairs (16-bit lanes), each into two digits (bytes). v·5243>>19 is
// v/100 for v < 43,699, and v·103>>10 is v/10 for v < 179.
func eightDigits(x uint64) uint64 {
	v := x/10000 | x%10000<<32
	t := v * 5243 >> 19 & 0x0000007F0000007F
	v = t | (v-t*100)<<16
	t = v * 103 >> 10 & 0x000F000F000F000F
	v = t | (v-t*10)<<8
	return v + 0x3030303030303030
}

// nearestFraction returns d, the numerator of the n-digit decimal
// fraction d/10^n nearest to m/2^22, and r = |d·2^22 - m·10^n|, its
// distance in units of 2^-22·10^-n.
func nearestFraction(m uint64, n int) (d, r uint64) {
	q := m * fracPow10[n]
	d, r = q>>fracBits, q&(fracOne-1)
	if r > fracOne/2 {
		d, r = d+1, fracOne-r
	}
	return d, r
}

var fracPow10 = [maxFracDigit + 1]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7}

// digitPairs holds "00" to "99", two bytes each.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"
