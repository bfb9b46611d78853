package archive

import (
	"encoding/json"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkNumber holds parseNumber to strconv.ParseFloat (the value, bit for
// bit) and to encoding/json (which texts are JSON numbers).
func checkNumber(t *testing.T, s string) {
	t.Helper()
	v, next, ok := parseNumber([]byte(s), 0)
	whole := ok && next == len(s)
	want, err := strconv.ParseFloat(s, 64)
	isJSON := json.Valid([]byte(s)) && strings.IndexAny(s[:1], "-0123456789") == 0 && strings.Trim(s, " \t\r\n") == s
	if wantOK := isJSON && err == nil; whole != wantOK {
		t.Errorf("parseNumber(%q): ok %v (next %d); want %v (JSON %v, strconv %v)", s, ok, next, wantOK, isJSON, err)
		return
	}
	if whole && math.Float64bits(v) != math.Float64bits(want) {
		t.Errorf("parseNumber(%q) = %v (%#x); strconv gives %v (%#x)", s, v, math.Float64bits(v), want, math.Float64bits(want))
	}
	// In an array, with room after it for the eight-byte way
	// (parseCommon), the number reads the same and ends at the same place.
	for _, after := range []string{",1717405260.1234567,1717405260.1234567]", "]}                                        ", "\n                                         "} {
		pv, pnext, pok := parseNumber([]byte(s+after), 0)
		if pok != ok || pnext != next || math.Float64bits(pv) != math.Float64bits(v) {
			t.Errorf("parseNumber(%q) with %q after it: %v, %d, %v; alone %v, %d, %v", s, after[:1], pv, pnext, pok, v, next, ok)
		}
	}
}

func TestParseNumberEdgeCases(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "1", "-1", "0.0", "-0.0", "0e5", "0.000", "1e0", "1E+2", "1e-2", "-0.5e-3",
		"1717405260.2896886", "1717405260.41807", "1717405210.123456789", // 17, 15 and 19 digits
		"1717405210.1234567891",                                                                            // 20 digits: strconv
		"1073741824.5", "1073741823.99999999", "2147483647.99999999", "2147483647.9999999", "2147483648.1", // the ends of parseUnixTime's range
		"1717405260.00000001", "1717405260.0", "1717405260.12345678", "1717405260.1e3", "1717405260.1E-3", "1717405260.1.5", "1717405260.",
		"9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995", // around 2^53 (ties)
		"18014398509481983", "18014398509481985", "36028797018963971", // ties to even above 2^54
		"18446744073709551615", "18446744073709551616", "99999999999999999999", // 2^64 - 1, 2^64, 20 nines
		"9999999999999999999", "1e22", "1e23", "9007199254740993e22", "123456789e19", "123456789e20",
		"0.1", "0.2", "0.3", "2.2250738585072014e-308", "2.2250738585072011e-308", "4.9e-324", "5e-324", "1e-400",
		"1.7976931348623157e308", "1.7976931348623158e308", "1.8e308", "1e999", "-1e999",
		"123456789012345678e-19", "1234567890123456789e-19", "1e-19", "9.999999999999999999e-1",
		"0.30000000000000004", "1.0000000000000002", "1.00000000000000011102230246251565404236316680908203125", // a tie, exactly
		"1.00000000000000011102230246251565404236316680908203124", "1.00000000000000011102230246251565404236316680908203126",
		"00", "01", "-", "+1", ".5", "1.", "1.e3", "1e", "1e+", "--1", "0x10", "1_000", "Infinity", "NaN", "", " 1",
		"1e0000000000000000000000000000000000000002", "0.000000000000000000000000000000000000000000001",
		"0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
	} {
		checkNumber(t, s)
	}
}

// parseNumber stops at the end of the number: what follows is the
// caller's.
func TestParseNumberNext(t *testing.T) {
	for _, c := range []struct {
		in   string
		next int
	}{{"1,2", 1}, {"-0.5]", 4}, {"1e3 ", 3}, {"12x", 2}, {"0123", 1}} {
		if _, next, ok := parseNumber([]byte(c.in), 0); !ok || next != c.next {
			t.Errorf("parseNumber(%q): next %d, ok %v; want %d", c.in, next, ok, c.next)
		}
	}
}

// Random decimals of every shape the fast ways take and around them:
// 1–21 digits, the point anywhere, exponents around 0 and ±22, and Unix
// times written the way the archive writer writes them.
func TestParseNumberRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 2))
	n := 300_000
	if testing.Short() {
		n = 30_000
	}
	for range n {
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteByte('-')
		}
		digits := 1 + rng.IntN(21)
		ds := make([]byte, digits)
		for i := range ds {
			ds[i] = byte('0' + rng.IntN(10))
		}
		if digits > 1 && ds[0] == '0' {
			ds[0] = byte('1' + rng.IntN(9))
		}
		if rng.IntN(8) == 0 { // trailing zeros
			for i := max(1, digits-1-rng.IntN(4)); i < digits; i++ {
				ds[i] = '0'
			}
		}
		if point := rng.IntN(digits + 1); point < digits && point > 0 {
			b.Write(ds[:point])
			b.WriteByte('.')
			b.Write(ds[point:])
		} else if point == 0 && rng.IntN(2) == 0 {
			b.WriteString("0.")
			b.Write(ds)
		} else {
			b.Write(ds)
		}
		if rng.IntN(3) == 0 {
			b.WriteString([]string{"e", "E", "e+", "e-", "E-"}[rng.IntN(5)])
			b.WriteString(strconv.Itoa(rng.IntN(30)))
		}
		checkNumber(t, b.String())
		ts := 1.7e9 + rng.Float64()*1e8
		checkNumber(t, strconv.FormatFloat(ts, 'f', -1, 64))
		checkNumber(t, strconv.FormatFloat(ts, 'f', rng.IntN(10), 64))
		checkNumber(t, strconv.FormatFloat(math.Float64frombits(rng.Uint64()), 'g', -1, 64))
		if t.Failed() {
			return
		}
	}
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-0.5e-3", "1717405260.2896886", "9007199254740993", "1e23", "01", "1.", "1e999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || !strings.ContainsAny(s[:1], "-0123456789") {
			return // not a number for json.Valid to judge alone
		}
		checkNumber(t, s)
	})
}

// BenchmarkParseNumber parses token times as the writer writes them (17
// significant digits mostly, above 2^53: the integer-division way).
func BenchmarkParseNumber(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var texts [][]byte
	for range 1024 {
		texts = append(texts, strconv.AppendFloat(nil, 1717405260+3600*rng.Float64(), 'f', -1, 64))
	}
	// In an array: room after each number for the eight-byte way.
	inArray := make([][]byte, len(texts))
	for i, t := range texts {
		inArray[i] = append(t[:len(t):len(t)], ",1717405260.1234567,1717405260.1234567,1717405260.1234567"...)
	}
	b.Run("parseNumber", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, ok := parseNumber(inArray[i%len(texts)], 0); !ok {
				b.Fatal("not parsed")
			}
		}
	})
	b.Run("parseNumber-alone", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, ok := parseNumber(texts[i%len(texts)], 0); !ok {
				b.Fatal("not parsed")
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := strconv.ParseFloat(string(texts[i%len(texts)]), 64); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// pow10x128[p+22] is 10^p scaled by 2^(127-floor(p·log2(10))), rounded
// down: its top bit set, and the exponent parseNumber derives from p.
func TestPow10x128(t *testing.T) {
	for p := -22; p <= 22; p++ {
		r := new(big.Rat)
		if p >= 0 {
			r.SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil))
		} else {
			r.SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-p)), nil))
		}
		exp2 := 1 + (p*108853)>>15
		scale := new(big.Int).Lsh(big.NewInt(1), uint(128+max(-exp2, 0)))
		r.Mul(r, new(big.Rat).SetInt(scale))
		if exp2 > 0 {
			r.Quo(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(exp2))))
		}
		want := new(big.Int).Div(r.Num(), r.Denom())
		got := new(big.Int).Lsh(new(big.Int).SetUint64(pow10x128[p+22][0]), 64)
		got.Or(got, new(big.Int).SetUint64(pow10x128[p+22][1]))
		if got.Cmp(want) != 0 || got.BitLen() != 128 {
			t.Errorf("10^%d: table %#x, want %#x (128 bits)", p, got, want)
		}
	}
}

// Eisel–Lemire decides Unix times with 17 digits itself (strconv is only
// its fallback, which would hide a wrong table or exponent), and agrees
// with strconv.
func TestEiselLemireDecides(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	undecided := 0
	for range 10_000 {
		s := strconv.FormatFloat(1.7e9+1e8*rng.Float64(), 'f', -1, 64)
		intPart, frac, _ := strings.Cut(s, ".")
		m, err := strconv.ParseUint(intPart+frac, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := eiselLemire(m, -len(frac))
		if !ok {
			undecided++
			continue
		}
		if want, _ := strconv.ParseFloat(s, 64); v != want {
			t.Fatalf("eiselLemire(%d, %d) = %v; strconv gives %v for %s", m, -len(frac), v, want, s)
		}
	}
	if undecided > 10 {
		t.Errorf("eiselLemire could not decide %d of 10,000 Unix times", undecided)
	}
}

func TestEightDigits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"12345678", 12345678, true}, {"00000000", 0, true}, {"99999999", 99999999, true}, {"01020304x", 1020304, true},
		{"1234567a", 0, false}, {"/2345678", 0, false}, {"1234567:", 0, false}, {"1234.678", 0, false}, {"1234 678", 0, false},
		{"\x7f2345678", 0, false}, {"\xb12345678", 0, false},
	} {
		if got, ok := eightDigits([]byte(c.in)); got != c.want || ok != c.ok {
			t.Errorf("eightDigits(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// divPow10 divides exactly every dividend parseUnixTime gives it (below
// 10^n·2^22): the ends, and random ones.
func TestDivPow10(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for n := 1; n <= 8; n++ {
		d := pow10u[n]
		xs := []uint64{0, 1, d - 1, d, d + 1, d<<22 - 1, d<<22 - d, d << 21}
		for range 100_000 {
			xs = append(xs, rng.Uint64N(d<<22))
		}
		for _, x := range xs {
			hi, _ := bits.Mul64(x, divPow10[n].m)
			if q := hi >> divPow10[n].s; q != x/d {
				t.Fatalf("10^%d: %d/10^%d = %d, divPow10 gives %d", n, x, n, x/d, q)
			}
		}
	}
}

// parseNumberAfter with one lastSecond for a whole run of numbers: times
// in the same second (the integer part not read again), times in other
// seconds, numbers that share the first ten digits but are no such time,
// and other numbers, each the value strconv gives.
func TestParseNumberAfterSharesSecond(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	var texts []string
	tm := 1717405260.0
	for range 200_000 {
		switch rng.IntN(12) {
		case 0:
			texts = append(texts, "17174052601.5", "171740526012", "1717405260e1") // the same first ten digits
		case 1:
			texts = append(texts, strconv.FormatFloat(rng.NormFloat64(), 'g', -1, 64))
		case 2:
			tm += 3 * rng.Float64()
			fallthrough
		default:
			tm += 0.05 * rng.Float64()
			texts = append(texts, strconv.FormatFloat(tm, 'f', -1, 64))
		}
	}
	line := []byte(strings.Join(texts, ",") + strings.Repeat(" ", fastRoom))
	var last lastSecond
	i := 0
	for k, s := range texts {
		v, next, ok := parseNumberAfter(line, i, &last)
		want, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || next != i+len(s) || math.Float64bits(v) != math.Float64bits(want) {
			t.Fatalf("number %d %q: %v (next %d, ok %v), want %v (next %d)", k, s, v, next, ok, want, i+len(s))
		}
		i = next + 1
	}
}
