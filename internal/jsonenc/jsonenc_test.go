package jsonenc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// marshal is what encoding/json writes for v, without the newline of an
// Encoder, with or without HTML escaping.
func marshal(t testing.TB, v any, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func checkFloat(t testing.TB, f float64) {
	t.Helper()
	got, err := Float(nil, f)
	if err != nil {
		t.Fatalf("Float(%v): %v", f, err)
	}
	if want := marshal(t, f, false); !bytes.Equal(got, want) {
		t.Fatalf("Float(%v) = %s, encoding/json writes %s", f, got, want)
	}
}

// Hand-picked values: the ends of the fast way's range and of the %f form.
func TestFloatEdges(t *testing.T) {
	for _, f := range []float64{
		0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.999999999999999e-7, 1e-7, 1e20, 1e21, 1e22, -1e-9,
		1 << 30, math.Nextafter(1<<30, 0), math.Nextafter(1<<30, 2), 1<<30 + 0.5,
		1 << 31, math.Nextafter(1<<31, 0), math.Nextafter(1<<31, 0) - 1,
		1717405260, 1717405260.5, 1717405260.25, 1717405260.125, 1717405260.1,
		1717405260 + 1.0/(1<<22), 1717405260 + 3.0/(1<<22), 1717405261 - 1.0/(1<<22),
		-1717405260.1, math.MaxFloat64, math.SmallestNonzeroFloat64,
	} {
		checkFloat(t, f)
	}
}

// Every fraction of one second in the fast way's range, and random times
// over the whole range: the same bytes as encoding/json.
func TestFloatUnixSecondsAsEncodingJSON(t *testing.T) {
	step := 1
	if testing.Short() {
		step = 61
	}
	for m := 1; m < fracOne; m += step {
		checkFloat(t, 1717405260+float64(m)/fracOne)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 1_000_000 {
		checkFloat(t, float64(1<<30)+float64(1<<30)*rng.Float64())
	}
}

// The fast way leaves only exact halfway cases to strconv, and takes all
// of the rest: with m = 2^14·odd the fraction lies halfway between two
// 7-digit decimals (m·10^7 ≡ 2^21 mod 2^22).
func TestUnixSecondsTakesAllButHalfway(t *testing.T) {
	left := 0
	for m := uint64(1); m < fracOne; m++ {
		f := 1717405260 + float64(m)/fracOne
		if _, ok := unixSeconds(nil, f); !ok {
			left++
			if m%(1<<14) != 0 || (m>>14)%2 != 1 {
				t.Fatalf("m=%d (%v) left to strconv, but it is not halfway between 7-digit decimals", m, f)
			}
		}
	}
	// Odd multiples of 2^14 below 2^22: 2^22/2^15 = 128; a halfway 7-digit
	// decimal is left only when no shorter one is within the interval, so
	// at most 128.
	if left > 128 {
		t.Errorf("%d fractions left to strconv, want at most 128", left)
	}
	for _, f := range []float64{1 << 30, 1<<30 - 1, 1 << 31, -1717405260.5, 1e9} {
		if _, ok := unixSeconds(nil, f); ok {
			t.Errorf("unixSeconds(%v) took a value outside (2^30, 2^31)", f)
		}
	}
}

func TestFloatRejectsNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := Float(nil, f)
		_, jerr := json.Marshal(f)
		if err == nil || jerr == nil || err.Error() != jerr.Error() {
			t.Errorf("Float(%v): error %v, encoding/json says %v", f, err, jerr)
		}
	}
}

func FuzzFloat(f *testing.F) {
	f.Add(uint64(0x41D9971A931ED918))
	f.Add(math.Float64bits(1e21))
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		checkFloat(t, v)
	})
}

func TestString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a&b>", "\b\f\n\r\t\x00\x1f\x7f", "bad \xff utf8 \xe2\x82", "sep\u2028\u2029", "é😀"} {
		for _, html := range []bool{false, true} {
			if got, want := String(nil, s, html), marshal(t, s, html); !bytes.Equal(got, want) {
				t.Errorf("String(%q, html=%v) = %s, encoding/json writes %s", s, html, got, want)
			}
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("a<b>\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			if got, want := String(nil, s, html), marshal(t, s, html); !bytes.Equal(got, want) {
				t.Fatalf("String(%q, html=%v) = %s, encoding/json writes %s", s, html, got, want)
			}
		}
	})
}

// BenchmarkFloat formats token times (Unix seconds) the fast way and as
// strconv does.
func BenchmarkFloat(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 1024)
	for i := range vals {
		vals[i] = 1717405260 + 3600*rng.Float64()
	}
	buf := make([]byte, 0, 64)
	b.Run("jsonenc", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf, _ = Float(buf[:0], vals[i%len(vals)])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = strconv.AppendFloat(buf[:0], vals[i%len(vals)], 'f', -1, 64)
		}
	})
	// A request's token times: increasing, a few dozen a second.
	times := make([]float64, 4096)
	tm := 1717405260.0
	for i := range times {
		tm += 0.04 * rng.Float64()
		times[i] = tm
	}
	b.Run("Floats", func(b *testing.B) {
		var out []byte
		for b.Loop() {
			out, _ = Floats(out[:0], times)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(times)), "ns/value")
	})
}

// Floats writes a list as encoding/json writes a []float64, brackets
// aside: times that share a second (the cached integer part), times
// that cross one, and other numbers among them.
func TestFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for range 2000 {
		vs := make([]float64, rng.IntN(40))
		tm := 1717405260 + 100*rng.Float64()
		for i := range vs {
			switch rng.IntN(10) {
			case 0:
				vs[i] = rng.NormFloat64() * 1e3
			case 1:
				vs[i] = float64(rng.IntN(5))
			default:
				tm += 0.3 * rng.Float64()
				vs[i] = tm
			}
		}
		got, err := Floats([]byte("["), vs)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ']')
		if want := marshal(t, vs, false); !bytes.Equal(got, want) {
			t.Fatalf("Floats(%v) = %s, encoding/json writes %s", vs, got, want)
		}
	}
	if _, err := Floats(nil, []float64{1717405260.5, math.NaN()}); err == nil {
		t.Error("Floats with a NaN: no error")
	}
}

// eightDigits against strconv, at the ends and at random.
func TestEightDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	xs := []uint64{0, 1, 9, 10, 99, 100, 9999, 10000, 43698, 99999999, 12345678, 10000000}
	for range 1_000_000 {
		xs = append(xs, rng.Uint64N(1e8))
	}
	for _, x := range xs {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], eightDigits(x))
		if want := fmt.Sprintf("%08d", x); string(b[:]) != want {
			t.Fatalf("eightDigits(%d) = %q, want %q", x, b, want)
		}
	}
}
