package num

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestReaders(t *testing.T) {
	type want struct {
		v                       float64
		float, finite, positive bool
	}
	for _, c := range []struct {
		name string
		in   any
		want want
	}{
		{"float64", 2.5, want{2.5, true, true, true}},
		{"float32", float32(0.5), want{0.5, true, true, true}},
		{"int", 3, want{3, true, true, true}},
		{"int64", int64(-4), want{-4, true, true, false}},
		{"int8", int8(7), want{7, true, true, true}},
		{"uint64", uint64(1) << 40, want{1 << 40, true, true, true}},
		{"uint8", uint8(255), want{255, true, true, true}},
		{"zero", 0.0, want{0, true, true, false}},
		{"json.Number", json.Number("1e3"), want{1000, true, true, true}},
		{"json.Number not a number", json.Number("abc"), want{0, false, false, false}},
		{"NaN", math.NaN(), want{math.NaN(), true, false, false}},
		{"+Inf", math.Inf(1), want{math.Inf(1), true, false, false}},
		{"-Inf", math.Inf(-1), want{math.Inf(-1), true, false, false}},
		{"json.Number Inf", json.Number("1e999"), want{0, false, false, false}}, // out of range: Float64 errs
		{"nil", nil, want{0, false, false, false}},
		{"string", "3", want{0, false, false, false}},
		{"bool", true, want{0, false, false, false}},
		{"duration", time.Second, want{0, false, false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				f    func(any) (float64, bool)
				ok   bool
			}{{"Float", Float, c.want.float}, {"Finite", Finite, c.want.finite}, {"Positive", Positive, c.want.positive}} {
				got, ok := r.f(c.in)
				if ok != r.ok {
					t.Errorf("%s(%#v) ok = %v, want %v", r.name, c.in, ok, r.ok)
				}
				same := got == c.want.v || math.IsNaN(got) && math.IsNaN(c.want.v)
				if ok && !same {
					t.Errorf("%s(%#v) = %v, want %v", r.name, c.in, got, c.want.v)
				}
			}
		})
	}
}
