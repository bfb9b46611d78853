package measure

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// memRequests is the size of BenchmarkAttributionMemory: the million
// requests of cmd/joulebench's AnalyzeMillion (issue 46), each generating
// over 8 segments (its 180–220 token times grouped by maxSegments).
const memRequests = 1_000_000

// memAttribution is BenchmarkAttributionMemory's data: 8 devices over
// 10 h at 1 Hz with energy counters (the samples' rate does not change
// what attribution holds, only the time its pieces' energy takes), and
// the shapes of a million requests arriving 27.8 a second, each
// generating for 4–6 s over 8 touching segments of 20–30 ms token gaps
// (about 140 at once, as in AnalyzeMillion). The shapes are built
// directly, and every request is one record (attribution reads a
// request's ID and that it is not nil; its shape holds the rest), so that
// the benchmark's own data is the shapes, 250 MB, as in an analysis.
func memAttribution(b *testing.B) (*PowerData, []*record.Request, *shapeList) {
	b.Helper()
	const (
		t0      = 1.7e9
		seconds = 36_000
		devices = 8
	)
	rng := rand.New(rand.NewPCG(46, 46))
	s := make([]record.PowerSample, 0, (seconds+1)*devices)
	energy := make([]float64, devices)
	for i := range seconds + 1 {
		t := t0 + float64(i) + rng.Float64()*1e-3
		for d := range devices {
			w := 300 + 50*rng.Float64()
			if i > 0 {
				energy[d] += w
			}
			s = append(s, record.PowerSample{T: t, Device: fmt.Sprintf("gpu%d", d), PowerW: w, EnergyJ: energy[d], HasEnergy: true})
		}
	}
	pd, err := NewPowerData(s)
	if err != nil {
		b.Fatal(err)
	}
	one := &record.Request{ID: "r", Phase: "formal", OK: true}
	reqs := make([]*record.Request, memRequests)
	sl := &shapeList{shapes: make([]tokenShape, memRequests)}
	segs := make([]segment, memRequests*maxSegments)
	var ar floatArena
	for i := range reqs {
		reqs[i] = one
		first := t0 + 10 + float64(i)*(seconds-30)/memRequests
		t := first
		sg := segs[i*maxSegments : (i+1)*maxSegments : (i+1)*maxSegments]
		for k := range sg {
			n := 23 + rng.IntN(5) // token times in the group
			b := t
			for range n {
				b += 0.02 + 0.01*rng.Float64()
			}
			sg[k] = segment{a: t, b: b, tokens: float64(n)}
			t = b
		}
		sl.shapes[i] = tokenShape{kind: shapeGen, first: first, done: t, tokens: float64(200)}
		sl.shapes[i].setSegments(sg, &ar)
	}
	return pd, reqs, sl
}

// BenchmarkAttributionMemory reports what attribution (attributeEnergy,
// what Attribute and SteadyState call) allocates and holds at a million
// requests of 8 segments each: alloc_MB, the bytes it allocates, and
// peak_live_MB, the most heap its call adds to what was live before
// (sampled every millisecond at GOGC=5, so that little garbage waits
// for the collector: an upper bound of what it holds at once, within
// about 5 % of the heap).
func BenchmarkAttributionMemory(b *testing.B) {
	pd, reqs, sl := memAttribution(b)
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var alloc, peak float64
	for b.Loop() {
		runtime.GC()
		base := heapObjects()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := sampleHeap()
		if _, err := pd.attributeEnergy(reqs, "counter", sl, nil); err != nil {
			b.Fatal(err)
		}
		top := stop()
		runtime.ReadMemStats(&ms1)
		alloc = float64(ms1.TotalAlloc - ms0.TotalAlloc)
		peak = max(peak, float64(top)-float64(base))
	}
	b.ReportMetric(alloc/1e6, "alloc_MB")
	b.ReportMetric(peak/1e6, "peak_live_MB")
}

// heapObjects is the heap's bytes in objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples heapObjects every millisecond until stop, which
// returns the largest.
func sampleHeap() (stop func() uint64) {
	done := make(chan struct{})
	var top uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			top = max(top, heapObjects())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(top, heapObjects())
	}
}
