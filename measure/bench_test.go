package measure

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Benchmark data, generated deterministically: 8 devices sampled at 10 Hz
// for 3,600 s with energy counters and memory, and 100,000 formal requests
// of 7–11 s each at 30 tokens/s ±2 % spread over the hour (about 254
// generating at once), with power following the load so that they reach
// steady state.
const (
	benchDevices  = 8
	benchSeconds  = 3600
	benchHz       = 10
	benchRequests = 100_000
)

var benchOnce struct {
	sync.Once
	samples []record.PowerSample
	uniform []*record.Request // no token_times
	chunked []*record.Request // token_times with counts, ~16 chunks each
}

func benchData() ([]record.PowerSample, []*record.Request, []*record.Request) {
	benchOnce.Do(func() {
		const t0 = 1.7e9
		mk := func(chunked bool) []*record.Request {
			rng := rand.New(rand.NewPCG(7, 7))
			out := make([]*record.Request, benchRequests)
			for i := range out {
				sent := t0 + 20 + rng.Float64()*(benchSeconds-40)
				first := sent + 0.05 + 0.4*rng.Float64()
				dur := 7 + 4*rng.Float64()
				tok := int(dur * 30 * (0.98 + 0.04*rng.Float64())) // 30 tokens/s ±2 %
				r := &record.Request{ID: fmt.Sprintf("req-%06d", i), Phase: "formal", OK: true,
					SentAt: sent, FirstTokenAt: first, DoneAt: first + dur, OutputTokens: tok}
				if chunked {
					k := 16
					r.TokenTimes = make([]float64, k)
					r.TokenCounts = make([]int, k)
					for j := range k {
						r.TokenTimes[j] = first + dur*float64(j)/float64(k-1)
						r.TokenCounts[j] = tok / k
					}
				}
				out[i] = r
			}
			return out
		}
		benchOnce.uniform = mk(false)
		benchOnce.chunked = mk(true)

		// Power follows the load: 10 W + 1.4 W per generating request per
		// device, plus noise, so that J/token is steady (the point of the
		// data is to exercise the whole steady-state path).
		starts := make([]float64, 0, benchRequests)
		ends := make([]float64, 0, benchRequests)
		for _, r := range benchOnce.uniform {
			starts = append(starts, r.FirstTokenAt)
			ends = append(ends, r.DoneAt)
		}
		slices.Sort(starts)
		slices.Sort(ends)
		rng := rand.New(rand.NewPCG(2024, 1))
		n := benchSeconds*benchHz + 1
		s := make([]record.PowerSample, 0, n*benchDevices)
		energy := make([]float64, benchDevices)
		prev := make([]float64, benchDevices)
		si, ei := 0, 0
		for i := range n {
			t := t0 + float64(i)/benchHz + rng.Float64()*1e-3
			for si < len(starts) && starts[si] <= t {
				si++
			}
			for ei < len(ends) && ends[ei] <= t {
				ei++
			}
			active := float64(si - ei)
			for d := range benchDevices {
				w := max(5, 10+1.4*active+5*rng.NormFloat64())
				if i > 0 {
					energy[d] += (prev[d] + w) / 2 / benchHz
				}
				prev[d] = w
				s = append(s, record.PowerSample{T: t, Device: fmt.Sprintf("gpu%d", d), PowerW: w,
					EnergyJ: energy[d], HasEnergy: true, MemUsedBytes: 70e9})
			}
		}
		benchOnce.samples = s
	})
	return benchOnce.samples, benchOnce.uniform, benchOnce.chunked
}

func benchPower(b *testing.B) *PowerData {
	s, _, _ := benchData()
	pd, err := NewPowerData(s)
	if err != nil {
		b.Fatal(err)
	}
	return pd
}

func BenchmarkNewPowerData(b *testing.B) {
	s, _, _ := benchData()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPowerData(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(s)), "samples")
}

func BenchmarkEnergy(b *testing.B) {
	pd := benchPower(b)
	start, end := pd.Span()
	start, end = start+1, end-1
	rng := rand.New(rand.NewPCG(3, 3))
	const k = 1024
	var as, bs [k]float64
	for i := range k {
		as[i] = start + rng.Float64()*(end-start-20)
		bs[i] = as[i] + rng.Float64()*20
	}
	for _, method := range []string{"trapz", "counter"} {
		b.Run(method, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := pd.Energy(as[i%k], bs[i%k], method); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkAttribute(b *testing.B) {
	pd := benchPower(b)
	_, uniform, chunked := benchData()
	for _, c := range []struct {
		name string
		reqs []*record.Request
	}{{"uniform", uniform}, {"token_times", chunked}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pd.Attribute(c.reqs, "counter"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSteadyState(b *testing.B) {
	pd := benchPower(b)
	_, uniform, _ := benchData()
	sp := SteadyParams{Window: 100, CVMax: 0.03, MinWindows: 2, Method: "counter"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pd.SteadyState(uniform, sp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline is what an analysis of one such run costs: index the
// power data, attribute, search for steady state.
func BenchmarkPipeline(b *testing.B) {
	s, uniform, _ := benchData()
	sp := SteadyParams{Window: 100, CVMax: 0.03, MinWindows: 2, Method: "counter"}
	b.ReportAllocs()
	for b.Loop() {
		pd, err := NewPowerData(s)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pd.Attribute(uniform, "counter"); err != nil {
			b.Fatal(err)
		}
		if _, err := pd.SteadyState(uniform, sp); err != nil {
			b.Fatal(err)
		}
	}
}

// benchITLRequests makes n successful requests of 180–220 chunks, one token
// each, 20–30 ms apart: the token times of the large analyze benchmark
// (cmd/joulebench), whose ITL values fill about ten radix buckets.
func benchITLRequests(n int) []*record.Request {
	rng := rand.New(rand.NewPCG(15, 15))
	reqs := make([]*record.Request, n)
	for i := range reqs {
		k := 180 + rng.IntN(41)
		r := &record.Request{ID: fmt.Sprintf("f%06d", i), Phase: "formal", OK: true, OutputTokens: k}
		r.FirstTokenAt = 1.7e9 + 10 + float64(i)/30
		t := r.FirstTokenAt
		r.TokenTimes = make([]float64, k)
		for j := range k {
			r.TokenTimes[j] = t
			t += 0.02 + 0.01*rng.Float64()
		}
		r.DoneAt = r.TokenTimes[k-1] + 0.0001
		reqs[i] = r
	}
	return reqs
}

// BenchmarkPercentileLong is one percentile of 4 M values held in a list
// (a count pass and a copy pass over them).
func BenchmarkPercentileLong(b *testing.B) {
	xs := itlMust(b, benchITLRequests(20_000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Percentile(xs, 90); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(xs)), "values")
}

// BenchmarkITLPercentiles is the three ITL percentiles of the benchmark
// profiles (p50, p90, p99) over the values of 20,000 requests (4 M),
// computed as they are generated: each on its own, and together (asked
// for beforehand, as the profiles' are).
func BenchmarkITLPercentiles(b *testing.B) {
	reqs := benchITLRequests(20_000)
	pcts := []float64{50, 90, 99}
	for _, c := range []struct {
		name string
		want []float64
	}{{"apart", nil}, {"together", pcts}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := NewITLValues(reqs, c.want...)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range pcts {
					if _, err := v.Percentile(p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func itlMust(b *testing.B, reqs []*record.Request) []float64 {
	b.Helper()
	xs, err := ITL(reqs)
	if err != nil {
		b.Fatal(err)
	}
	return xs
}

// BenchmarkSteadyStateTokenTimes is SteadyState over 100,000 requests
// with 180–220 token times each, one token per chunk (20 M times: the
// large analyze benchmark's requests).
func BenchmarkSteadyStateTokenTimes(b *testing.B) {
	pd := benchPower(b)
	reqs := benchITLRequests(benchRequests)
	sp := SteadyParams{Window: 100, CVMax: 0.03, MinWindows: 2, Method: "counter"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pd.SteadyState(reqs, sp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitPhases(b *testing.B) {
	pd := benchPower(b)
	_, uniform, _ := benchData()
	start, end := pd.Span()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pd.SplitPhases(uniform, start, end, "counter"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(uniform)), "requests")
}

func BenchmarkAttributeResident(b *testing.B) {
	pd := benchPower(b)
	_, uniform, _ := benchData()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pd.AttributeResident(uniform, "counter"); err != nil {
			b.Fatal(err)
		}
	}
}
