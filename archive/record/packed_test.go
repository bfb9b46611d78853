package record

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
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

// Token times packed into a temporary file by several writers at once
// come back bit for bit; once the file cannot be read, they read as NaN
// and the store (and the run) say why.
func TestTimesFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "times-*")
	if err != nil {
		t.Fatal(err)
	}
	s := NewTimesStore(osFile{f})
	const writers, each = 4, 3000
	reqs := make([]Request, writers*each)
	want := make([][]float64, len(reqs))
	for i := range reqs {
		n := i % 300 // 0 to 299 times: many slabs of 1 MiB a writer
		for k := range n {
			want[i] = append(want[i], 1717405260.123456+float64(i)+0.021*float64(k))
		}
		if i%1000 == 7 {
			want[i] = append(want[i], math.NaN(), math.Inf(-1), 5e-324)
		}
		reqs[i].TokenTimes = slices.Clone(want[i])
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			tw := s.NewWriter()
			for i := w; i < len(reqs); i += writers {
				if errs[w] = tw.Pack(&reqs[i]); errs[w] != nil {
					return
				}
			}
			errs[w] = tw.Flush()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	run := &Run{Requests: reqs}
	run.SetTimesStore(s)
	for i := range reqs {
		r := &reqs[i]
		if len(want[i]) > 0 && (!r.TokenTimesPacked() || r.TokenTimes != nil) {
			t.Fatalf("request %d: not packed", i)
		}
		if r.TokenTimesLen() != len(want[i]) {
			t.Fatalf("request %d: TokenTimesLen %d, want %d", i, r.TokenTimesLen(), len(want[i]))
		}
		got := r.Times(nil)
		if len(got) != len(want[i]) {
			t.Fatalf("request %d: %d times back, want %d", i, len(got), len(want[i]))
		}
		for k := range got {
			if math.Float64bits(got[k]) != math.Float64bits(want[i][k]) {
				t.Fatalf("request %d: time %d is %v, want %v", i, k, got[k], want[i][k])
			}
		}
	}
	// Read back by several readers at once, from the blocks they share.
	for w := range writers {
		wg.Go(func() {
			for i := len(reqs) - 1 - w; i >= 0; i -= writers {
				got := reqs[i].Times(nil)
				if len(got) != len(want[i]) || len(got) > 0 && math.Float64bits(got[len(got)-1]) != math.Float64bits(want[i][len(got)-1]) {
					t.Errorf("request %d read in parallel: %v", i, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := run.TimesErr(); err != nil {
		t.Fatal(err)
	}
	// The file gone (closed, its blocks dropped): every time is NaN, and
	// the error is kept.
	if err := s.f.Close(); err != nil {
		t.Fatal(err)
	}
	s.cache = [timesCacheBlocks]block{}
	got := reqs[5].Times(nil)
	if len(got) != 5 || !math.IsNaN(got[0]) || !math.IsNaN(got[4]) {
		t.Errorf("times of a closed file: %v, want 5 NaN", got)
	}
	if err := run.TimesErr(); err == nil || !strings.Contains(err.Error(), "token times: temporary file") {
		t.Errorf("TimesErr = %v, want the read's error", err)
	}
}

// osFile is a TimesFile over an *os.File, as the archive's reader opens
// one (archive.newTimesStore).
type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
