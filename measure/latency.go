package measure

import (
	"fmt"
	"math"
	"sort"

	"github.com/joulebench/joulebench/archive"
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
func ITL(reqs []*archive.Request) ([]float64, error) {
	// A first pass checks the requests and counts the values, so that the
	// list (tens of millions of values in a long run) is allocated once.
	n := 0
	for _, r := range reqs {
		if !r.OK || len(r.TokenTimes) < 2 {
			continue
		}
		if r.TokenCounts != nil && len(r.TokenCounts) != len(r.TokenTimes) {
			return nil, fmt.Errorf("itl: request %s: %d token_counts for %d token_times", r.ID, len(r.TokenCounts), len(r.TokenTimes))
		}
		prev := r.TokenTimes[0]
		for i := 1; i < len(r.TokenTimes); i++ {
			t := r.TokenTimes[i]
			if math.IsNaN(t) || t < prev {
				return nil, fmt.Errorf("itl: request %s: token_times[%d] = %v is before the chunk before it", r.ID, i, t)
			}
			if r.TokenCounts == nil {
				n++
				prev = t
				continue
			}
			switch c := r.TokenCounts[i]; {
			case c < 0:
				return nil, fmt.Errorf("itl: request %s: token_counts[%d] = %d is negative", r.ID, i, c)
			case c > 0:
				n++
				prev = t
			}
		}
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]float64, 0, n)
	for _, r := range reqs {
		if !r.OK || len(r.TokenTimes) < 2 {
			continue
		}
		prev := r.TokenTimes[0]
		for i := 1; i < len(r.TokenTimes); i++ {
			t := r.TokenTimes[i]
			c := 1
			if r.TokenCounts != nil {
				c = r.TokenCounts[i]
			}
			if c == 0 {
				continue // keep prev: the gap runs on to the next chunk with tokens
			}
			out = append(out, (t-prev)/float64(c))
			prev = t
		}
	}
	return out, nil
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
		st := BaselineStat{Samples: hi - lo, MemMaxBytes: -1}
		for i := lo; i < hi; i++ {
			st.MemMaxBytes = max(st.MemMaxBytes, d.mem[i])
		}
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
