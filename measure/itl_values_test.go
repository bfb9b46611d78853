package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// itlRequests makes n requests of about perReq chunks each, some with
// token counts (zeros among them), some failed or with one chunk.
func itlRequests(seed uint64, n, perReq int) []*record.Request {
	rng := rand.New(rand.NewPCG(seed, seed))
	reqs := make([]*record.Request, n)
	for i := range reqs {
		r := &record.Request{ID: fmt.Sprint(i), OK: rng.IntN(10) != 0}
		k := rng.IntN(perReq + 1)
		t := 100 * rng.Float64()
		withCounts := rng.IntN(3) == 0
		for range k {
			r.TokenTimes = append(r.TokenTimes, t)
			if withCounts {
				r.TokenCounts = append(r.TokenCounts, rng.IntN(4))
			}
			// Ties (equal gaps, zero gaps) as well as distinct values.
			switch rng.IntN(4) {
			case 0:
				t += 0.02
			case 1:
			default:
				t += 0.01 + 0.03*rng.Float64()
			}
		}
		reqs[i] = r
	}
	return reqs
}

// ITLValues' statistics are those of ITL's list, bit for bit, on short
// lists (sorted) and long ones (radix selection, more than one buffer),
// and its errors are the same.
func TestITLValuesMatchList(t *testing.T) {
	// Four parts read in parallel for lists of 4·parallelMin values or more.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	cases := []struct {
		name string
		reqs []*record.Request
	}{
		{"empty", nil},
		{"one value", []*record.Request{{ID: "a", OK: true, TokenTimes: []float64{1, 1.5}}}},
		{"short", itlRequests(1, 20, 30)},
		{"long", itlRequests(2, 400, 200)},
		{"long, many ties", itlRequests(3, 2000, 40)},
		{"long enough for 4 parts", itlRequests(6, 4000, 200)},
		// 1e308 - (-1e308) overflows to +Inf: a non-finite value in the
		// middle of a long list.
		{"infinite gap", append(itlRequests(4, 100, 200), &record.Request{ID: "inf", OK: true, TokenTimes: []float64{-1e308, 1e308}}, itlRequests(5, 100, 200)[0])},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list, lerr := ITL(tc.reqs)
			v, verr := NewITLValues(tc.reqs)
			if lerr != nil || verr != nil {
				t.Fatalf("ITL: %v, NewITLValues: %v", lerr, verr)
			}
			if v.Len() != len(list) {
				t.Fatalf("Len = %d, list has %d", v.Len(), len(list))
			}
			if tc.name == "long" && len(list) <= selectSortMax+itlChunk {
				t.Fatalf("long case has only %d values", len(list))
			}
			if tc.name == "long enough for 4 parts" && (len(list) < 4*parallelMin || len(v.values().parts) != 4 || len(sliceValues(list).parts) != 4) {
				t.Fatalf("%d values in %d parts", len(list), len(v.values().parts))
			}
			s := v.Slice()
			if len(s) != len(list) || (list == nil) != (s == nil) {
				t.Fatalf("Slice has %d values (nil %v), list %d (nil %v)", len(s), s == nil, len(list), list == nil)
			}
			for i := range s {
				if math.Float64bits(s[i]) != math.Float64bits(list[i]) {
					t.Fatalf("Slice[%d] = %v, list %v", i, s[i], list[i])
				}
			}
			same := func(what string, got float64, gerr error, want float64, werr error) {
				t.Helper()
				if fmt.Sprint(gerr) != fmt.Sprint(werr) || math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%s = %v, %v; on the list %v, %v", what, got, gerr, want, werr)
				}
			}
			for _, p := range []float64{0, 1, 25, 50, 90, 99, 99.9, 100, -1, 101, math.NaN()} {
				got, gerr := v.Percentile(p)
				want, werr := Percentile(list, p)
				same(fmt.Sprintf("Percentile(%v)", p), got, gerr, want, werr)
			}
			// Asked for together (the hint), in another order, some twice
			// and some not in the hint: the same values and errors.
			hinted, err := NewITLValues(tc.reqs, 99, 50, 90, 0, 100, 99.9, -1, math.NaN())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []float64{50, 99, 1, 90, 50, 0, 100, 99.9, -1, 101, math.NaN()} {
				got, gerr := hinted.Percentile(p)
				want, werr := Percentile(list, p)
				same(fmt.Sprintf("hinted Percentile(%v)", p), got, gerr, want, werr)
			}
			got, gerr := v.Median()
			want, werr := Median(list)
			same("Median", got, gerr, want, werr)
			got, gerr = v.Mean()
			want, werr = Mean(list)
			same("Mean", got, gerr, want, werr)
		})
	}
}

func TestNewITLValuesErrors(t *testing.T) {
	for _, r := range []*record.Request{
		{ID: "back", OK: true, TokenTimes: []float64{1, 0.5}},
		{ID: "nan", OK: true, TokenTimes: []float64{1, math.NaN()}},
		{ID: "counts", OK: true, TokenTimes: []float64{1, 2}, TokenCounts: []int{1}},
		{ID: "negative", OK: true, TokenTimes: []float64{1, 2}, TokenCounts: []int{1, -1}},
	} {
		_, lerr := ITL([]*record.Request{r})
		_, verr := NewITLValues([]*record.Request{r})
		_, herr := NewITLValues([]*record.Request{r}, 50, 90)
		if lerr == nil || verr == nil || lerr.Error() != verr.Error() || herr == nil || herr.Error() != lerr.Error() {
			t.Errorf("%s: ITL: %v, NewITLValues: %v, with percentiles: %v", r.ID, lerr, verr, herr)
		}
	}
	// Checked on parts in parallel, the error is still the first in
	// request order.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	reqs := itlRequests(8, 4*itlPartMin, 10)
	reqs[2*itlPartMin+5] = &record.Request{ID: "second", OK: true, TokenTimes: []float64{1, 0}}
	reqs[itlPartMin+7] = &record.Request{ID: "first", OK: true, TokenTimes: []float64{1, 0}}
	if _, err := NewITLValues(reqs, 99); err == nil || !strings.Contains(err.Error(), "request first:") {
		t.Errorf("two bad requests: %v; want the first", err)
	}
}

// With the count by fineBits bits made as the requests are checked, a
// rank whose fine bucket holds more than copyMax keys is found alone; the
// others from the copied fine buckets: all as on the list.
func TestITLValuesFineFallback(t *testing.T) {
	reqs := itlRequests(3, 2000, 40) // many ties (gaps of 0.02 and 0)
	list, err := ITL(reqs)
	if err != nil {
		t.Fatal(err)
	}
	pcts := []float64{1, 10, 50, 90, 99}
	v, err := NewITLValues(reqs, pcts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, copyMax := range []int{1 << 30, 64} {
		vals := v.values()
		if vals.fine == nil {
			t.Fatal("no fine count")
		}
		vals.copyMax = copyMax
		got := percentilesOf(vals, pcts)
		for i, p := range pcts {
			want, werr := Percentile(list, p)
			if math.Float64bits(got[i].x) != math.Float64bits(want) || fmt.Sprint(got[i].err) != fmt.Sprint(werr) {
				t.Errorf("copyMax %d: percentile %v = %v, %v; on the list %v, %v", copyMax, p, got[i].x, got[i].err, want, werr)
			}
		}
	}
}
