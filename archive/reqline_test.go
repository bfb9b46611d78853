package archive

import (
	"bytes"
	"github.com/joulebench/joulebench/archive/record"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomRequest fills every field of a Request by reflection, each left
// at its zero value one time in three (to cover omitempty), so that a
// field added to Request is covered here without a change, and
// appendRequestLine fails this test until it writes the new field too.
func randomRequest(rng *rand.Rand) record.Request {
	var r record.Request
	v := reflect.ValueOf(&r).Elem()
	strs := []string{"", "f000123", "formal", "a\"quoted\\ <b>&amp;", "line\nbreak\t\x01", "bad \xff", "é\u2028"}
	floats := []float64{0, 1717405260.1234567, 1717405260 + rng.Float64()*3600, rng.Float64(), 1e-7, 1e21, -3.5, 1 << 30, 12}
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue // packed token times: not a field of the line
		}
		if rng.IntN(3) == 0 {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(strs[rng.IntN(len(strs))])
		case reflect.Float64:
			f.SetFloat(floats[rng.IntN(len(floats))])
		case reflect.Int:
			f.SetInt(int64(rng.IntN(5000) - 2))
		case reflect.Bool:
			f.SetBool(rng.IntN(2) == 0)
		case reflect.Slice:
			n := rng.IntN(6)
			s := reflect.MakeSlice(f.Type(), n, n)
			for k := range n {
				switch s.Index(k).Kind() {
				case reflect.Float64:
					s.Index(k).SetFloat(floats[rng.IntN(len(floats))])
				case reflect.Int:
					s.Index(k).SetInt(int64(rng.IntN(9)))
				}
			}
			f.Set(s)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			for range rng.IntN(4) {
				m.SetMapIndex(reflect.ValueOf(strs[rng.IntN(len(strs))]), reflect.ValueOf(floats[rng.IntN(len(floats))]))
			}
			f.Set(m)
		default:
			panic("randomRequest: no case for field " + v.Type().Field(i).Name + " of kind " + f.Kind().String())
		}
	}
	return r
}

// The hand-written line is the one encoding/json writes, for every field.
func TestRequestLineIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 20_000 {
		r := randomRequest(rng)
		want, err := marshalLine(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendRequestLine([]byte("keep"), &r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte("keep")) || !bytes.Equal(got[4:], want) {
			t.Fatalf("request %+v:\n got %s\nwant %s", r, got, want)
		}
	}
}

// A non-finite number is an error naming its member, and nothing is
// appended.
func TestRequestLineRejectsNonFinite(t *testing.T) {
	for _, c := range []struct {
		r    record.Request
		name string
	}{
		{record.Request{ID: "a", SentAt: math.NaN()}, "sent_at"},
		{record.Request{ID: "a", TokenTimes: []float64{1, math.Inf(1)}}, "token_times"},
		{record.Request{ID: "a", EngineTimings: map[string]float64{"eval_duration": math.Inf(-1)}}, "engine_timings.eval_duration"},
		{record.Request{ID: "a", FirstTokenBoundS: math.NaN()}, "first_token_bound_s"},
	} {
		got, err := appendRequestLine([]byte("keep"), &c.r)
		if err == nil || !strings.Contains(err.Error(), c.name+": json: unsupported value") {
			t.Errorf("%+v: error %v, want one naming %s", c.r, err, c.name)
		}
		if string(got) != "keep" {
			t.Errorf("%+v: appended %q on error", c.r, got)
		}
	}
}

// BenchmarkAppendRequest writes a request of 4,096 token times, the
// shape of the run-path benchmark's, by hand and by encoding/json; the
// figure to read is ns per token time.
func BenchmarkAppendRequest(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	r := record.Request{ID: "run-f000001", Phase: "formal", SentAt: 1717405260.5, FirstTokenAt: 1717405260.52,
		DoneAt: 1717405262, OutputTokens: 4096, TokensSource: "usage", OutputChars: 16384, OK: true, MaxTokens: 4096}
	t := r.FirstTokenAt
	for range 4096 {
		r.TokenTimes = append(r.TokenTimes, t)
		t += 0.0004 * rng.Float64()
	}
	per := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(r.TokenTimes)), "ns/time")
	}
	b.Run("hand", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = appendRequestLine(buf[:0], &r)
		}
		per(b)
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := marshalLine(&r); err != nil {
				b.Fatal(err)
			}
		}
		per(b)
	})
}
