package measure

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// ITL returns the inter-token latencies in seconds of the given requests,
// pooled in request order: for each successful request with at least two
// recorded chunk arrivals (token_times), every gap between successive
// chunks divided by the number of tokens the later chunk carried
// (token_counts; 1 each when absent). A chunk that carried several tokens
// thus yields one value, the mean time per token it delivered, rather than
// one long gap (vLLM's bench serve reports the raw gap; SGLang's
// bench_serving divides by the accepted length, as here). A chunk with a
// count of 0 (a chunk with no token) adds its gap to the next one that has
// tokens. Requests without token_times contribute nothing.
func ITL(reqs []*record.Request) ([]float64, error) {
	v, err := NewITLValues(reqs)
	if err != nil {
		return nil, err
	}
	return v.Slice(), nil
}

// ITLValues is the list ITL returns, not held in memory: the requests it
// is computed from and its length. Its statistics read the values as they
// are computed, a buffer at a time; a long run's pooled ITL (tens of
// millions of values) is never materialised. Its methods give the results
// (and errors) of the functions of the same name on ITL's list. It is
// safe for concurrent use.
type ITLValues struct {
	reqs []*record.Request
	n    int

	partsOnce sync.Once
	parts     []chunks
	histOnce  sync.Once
	top       []int
	perPart   [][]int
	fine      [][]int32 // with the hint: the count by fineBits bits, per part

	// want: the percentiles to find together, the first time one of
	// them is asked for (NewITLValues' hint), and then found.
	want     []float64
	wantOnce sync.Once
	wanted   []percentile
}

// itlChunk is how many values ITLValues computes at a time.
const itlChunk = 1024

// NewITLValues checks the requests as ITL does (with the same errors) and
// counts the values. want, a hint, lists the percentiles that will be
// asked for: the first time one of them is, they are all found together,
// in fewer passes over the values than one by one; and the first of
// those passes (a count of the values by the top bits of their keys) is
// made here, as the requests are checked, on parts in parallel.
func NewITLValues(reqs []*record.Request, want ...float64) (*ITLValues, error) {
	if len(want) == 0 {
		n := 0
		var scratch []float64
		for _, r := range reqs {
			c, err := itlCheck(r, &scratch)
			if err != nil {
				return nil, err
			}
			n += c
		}
		return &ITLValues{reqs: reqs, n: n}, nil
	}
	p := max(1, min(runtime.GOMAXPROCS(0), len(reqs)/itlPartMin))
	parts := make([]chunks, p)
	perPart := make([][]int, p)
	fine := make([][]int32, p)
	counts := make([]int, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for i := range p {
		rs := reqs[i*len(reqs)/p : (i+1)*len(reqs)/p]
		parts[i] = itlChunks(rs)
		wg.Go(func() {
			const shift = 64 - fineBits
			f := make([]int32, 1<<fineBits)
			buf := make([]float64, 0, itlChunk)
			var scratch []float64
			count := func(xs []float64) bool {
				for _, x := range xs {
					f[orderKey(x)>>shift]++
				}
				return true
			}
			for j, r := range rs {
				c, err := itlCheck(r, &scratch)
				if err != nil {
					errs[i] = err
					return
				}
				counts[i] += c
				itlEachBuf(rs[j:j+1], buf, &scratch, count)
			}
			if counts[i] > math.MaxInt32 {
				errs[i] = fmt.Errorf("itl: more than %d values in a part", math.MaxInt32)
				return
			}
			perPart[i], fine[i] = sumFine(f), f
		})
	}
	wg.Wait()
	n := 0
	for i, err := range errs {
		if err != nil {
			return nil, err // the first in request order
		}
		n += counts[i]
	}
	top := perPart[0]
	if p > 1 {
		top = make([]int, 1<<radixBits)
		for _, h := range perPart {
			for b, c := range h {
				top[b] += c
			}
		}
	}
	v := &ITLValues{reqs: reqs, n: n, want: slices.Clone(want)}
	v.partsOnce.Do(func() { v.parts = parts })
	v.histOnce.Do(func() { v.top, v.perPart = top, perPart })
	v.fine = fine
	return v, nil
}

// itlPartMin is the fewest requests per part of NewITLValues' pass.
const itlPartMin = 1 << 10

// itlCheck checks a request's chunks as ITL does and returns how many
// values it gives.
// A request whose token times are packed has them unpacked into
// *scratch (grown as needed).
func itlCheck(r *record.Request, scratch *[]float64) (int, error) {
	if !r.OK || r.TokenTimesLen() < 2 {
		return 0, nil
	}
	tt := r.TokenTimes
	if r.TokenTimesPacked() {
		*scratch = r.AppendTokenTimes((*scratch)[:0])
		tt = *scratch
	}
	if r.TokenCounts != nil && len(r.TokenCounts) != len(tt) {
		return 0, fmt.Errorf("itl: request %s: %d token_counts for %d token_times", r.ID, len(r.TokenCounts), len(tt))
	}
	n := 0
	prev := tt[0]
	for i := 1; i < len(tt); i++ {
		t := tt[i]
		if math.IsNaN(t) || t < prev {
			return 0, fmt.Errorf("itl: request %s: token_times[%d] = %v is before the chunk before it", r.ID, i, t)
		}
		if r.TokenCounts == nil {
			n++
			prev = t
			continue
		}
		switch c := r.TokenCounts[i]; {
		case c < 0:
			return 0, fmt.Errorf("itl: request %s: token_counts[%d] = %d is negative", r.ID, i, c)
		case c > 0:
			n++
			prev = t
		}
	}
	return n, nil
}

// Len is the number of values.
func (v *ITLValues) Len() int { return v.n }

// Slice returns the values in a new list (nil when there are none).
func (v *ITLValues) Slice() []float64 {
	if v.n == 0 {
		return nil
	}
	out := make([]float64, 0, v.n)
	for xs := range itlChunks(v.reqs) {
		out = append(out, xs...)
	}
	return out
}

// itlChunks yields the ITL values of reqs in order, up to itlChunk at a
// time, from a buffer it reuses.
func itlChunks(reqs []*record.Request) chunks {
	return func(yield func([]float64) bool) { itlEach(reqs, yield) }
}

func itlEach(reqs []*record.Request, yield func([]float64) bool) {
	var scratch []float64
	itlEachBuf(reqs, make([]float64, 0, itlChunk), &scratch, yield)
}

// itlEachBuf is itlEach with the buffer buf (empty, with room for
// itlChunk values) and scratch, where a request's packed token times are
// unpacked (grown as needed, and kept by the caller from call to call).
func itlEachBuf(reqs []*record.Request, buf []float64, scratch *[]float64, yield func([]float64) bool) {
	for _, r := range reqs {
		if !r.OK || r.TokenTimesLen() < 2 {
			continue
		}
		tt := r.TokenTimes
		if r.TokenTimesPacked() {
			*scratch = r.AppendTokenTimes((*scratch)[:0])
			tt = *scratch
		}
		if r.TokenCounts == nil {
			// One token per chunk: the gaps themselves (x/1 is x), a
			// buffer's room at a time.
			for i := 1; i < len(tt); {
				if len(buf) == cap(buf) {
					if !yield(buf) {
						return
					}
					buf = buf[:0]
				}
				n := min(len(tt)-i, cap(buf)-len(buf))
				gaps := buf[len(buf) : len(buf)+n]
				for j := range gaps {
					gaps[j] = tt[i+j] - tt[i+j-1]
				}
				buf = buf[:len(buf)+n]
				i += n
			}
			continue
		}
		prev := tt[0]
		for i := 1; i < len(tt); i++ {
			t := tt[i]
			c := r.TokenCounts[i]
			if c == 0 {
				continue // keep prev: the gap runs on to the next chunk with tokens
			}
			if len(buf) == cap(buf) {
				if !yield(buf) {
					return
				}
				buf = buf[:0]
			}
			buf = append(buf, (t-prev)/float64(c))
			prev = t
		}
	}
	if len(buf) > 0 {
		yield(buf)
	}
}

// values is the ITL as values: in order, and in up to GOMAXPROCS parts
// (of consecutive requests) for the passes that read in parallel, with
// the count of the first radix pass kept for the next percentile.
func (v *ITLValues) values() values {
	v.partsOnce.Do(func() {
		p := max(1, min(runtime.GOMAXPROCS(0), v.n/parallelMin))
		for i := range p {
			reqs := v.reqs[i*len(v.reqs)/p : (i+1)*len(v.reqs)/p]
			v.parts = append(v.parts, itlChunks(reqs))
		}
	})
	return values{n: v.n, all: itlChunks(v.reqs), parts: v.parts, hist: v.partHists, fine: v.fine}
}

func (v *ITLValues) partHists() ([]int, [][]int) {
	v.histOnce.Do(func() { v.top, v.perPart = partHists(v.parts) })
	return v.top, v.perPart
}

// Percentile is Percentile(ITL's list, pct).
func (v *ITLValues) Percentile(pct float64) (float64, error) {
	if i := slices.Index(v.want, pct); i >= 0 {
		v.wantOnce.Do(func() { v.wanted = percentilesOf(v.values(), v.want) })
		return v.wanted[i].x, v.wanted[i].err
	}
	return percentileOf(v.values(), pct)
}

// Median is Median(ITL's list).
func (v *ITLValues) Median() (float64, error) {
	m, err := v.Percentile(50)
	if err != nil {
		return 0, fmt.Errorf("median: %w", err)
	}
	return m, nil
}

// Mean is Mean(ITL's list).
func (v *ITLValues) Mean() (float64, error) {
	if err := checkFiniteOf("mean", v.n, itlChunks(v.reqs)); err != nil {
		return 0, err
	}
	s := 0.0
	for xs := range itlChunks(v.reqs) {
		for _, x := range xs {
			s += x
		}
	}
	return finiteResult("mean", s/float64(v.n))
}

// BaselineStat is one device's idle-baseline summary.
type BaselineStat struct {
	// Samples is how many power samples fall in the interval.
	Samples int
	// PowerCV is the coefficient of variation (population std / mean) of
	// those samples' power; 0 with fewer than two samples.
	PowerCV float64
	// MemMaxBytes is the largest known memory use in the interval, -1 when
	// no sample there has one.
	MemMaxBytes int64
}

// BaselineStats summarizes every device's samples with a ≤ t ≤ b: how
// stable its power was (CV of the samples, unweighted: each sample is one
// reading of the idle device) and the most memory it held.
func (p *PowerData) BaselineStats(a, b float64) (map[string]BaselineStat, error) {
	if p == nil || len(p.devs) == 0 {
		return nil, fmt.Errorf("baseline stats: no power data")
	}
	if err := checkInterval(a, b); err != nil {
		return nil, fmt.Errorf("baseline stats: %w", err)
	}
	out := make(map[string]BaselineStat, len(p.devs))
	for _, d := range p.devs {
		lo := sort.SearchFloat64s(d.t, a)
		hi := lo
		for hi < len(d.t) && d.t[hi] <= b {
			hi++
		}
		st := BaselineStat{Samples: hi - lo, MemMaxBytes: d.mem.maxIn(lo, hi)}
		if st.Samples >= 2 {
			m, v := meanVar(d.p[lo:hi])
			if m > 0 {
				st.PowerCV = math.Sqrt(v) / m
			} else if v > 0 {
				return nil, fmt.Errorf("baseline stats: device %s: mean power 0", d.name)
			}
		}
		out[d.name] = st
	}
	return out, nil
}
