package record

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Packed token times come back bit for bit, whatever they are, and take
// about 3 bytes a time for the gaps of a stream.
func TestPackTokenTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 46))
	stream := make([]float64, 200)
	tm := 1717405260.123456
	for i := range stream {
		stream[i] = tm
		tm += 0.02 + 0.01*rng.Float64()
	}
	odd := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, math.MaxFloat64, -1, 1717405260, 3}
	for _, ts := range [][]float64{stream, odd, {42}, nil} {
		r := Request{TokenTimes: slices.Clone(ts)}
		buf := r.PackTokenTimes(make([]byte, 0, 4))
		if len(ts) > 0 && (r.TokenTimes != nil || !r.TokenTimesPacked()) {
			t.Fatalf("%d times: not packed", len(ts))
		}
		if got := r.TokenTimesLen(); got != len(ts) {
			t.Errorf("TokenTimesLen = %d, want %d", got, len(ts))
		}
		got := r.Times(nil)
		if len(got) != len(ts) {
			t.Fatalf("%d times back, want %d", len(got), len(ts))
		}
		for i := range ts {
			if math.Float64bits(got[i]) != math.Float64bits(ts[i]) {
				t.Errorf("time %d: %v back, want %v", i, got[i], ts[i])
			}
		}
		k := 0
		for i, tm := range r.TokenTimesAll() {
			if i != k || math.Float64bits(tm) != math.Float64bits(ts[i]) {
				t.Errorf("TokenTimesAll: %d, %v at %d", i, tm, k)
			}
			k++
		}
		if k != len(ts) {
			t.Errorf("TokenTimesAll: %d times, want %d", k, len(ts))
		}
		if last, ok := r.LastTokenTime(); ok != (len(ts) > 0) || ok && math.Float64bits(last) != math.Float64bits(ts[len(ts)-1]) {
			t.Errorf("LastTokenTime = %v, %v", last, ok)
		}
		if len(ts) == len(stream) && len(buf) > 3*len(ts)+12 {
			t.Errorf("200 times of a stream took %d bytes, want at most 3 a time", len(buf))
		}
		r.UnpackTokenTimes()
		if r.TokenTimesPacked() || len(r.TokenTimes) != len(ts) {
			t.Errorf("UnpackTokenTimes: packed %v, %d times", r.TokenTimesPacked(), len(r.TokenTimes))
		}
	}
}
