package measure

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// memResident is BenchmarkResidentMemory's data: the power of
// memAttribution's run (8 devices over 10 h at 1 Hz with energy
// counters) and the residencies [SentAt, DoneAt] of its million requests
// (issue 46), arriving 27.8 a second, each resident 4.2–6.7 s (a prefill
// of 0.2–0.5 s, then 8 groups of 23–27 token gaps of 20–30 ms): about 150
// at once. A residency is one span, whatever the segments of its
// generation.
func memResident(b *testing.B) (*PowerData, [][2]float64) {
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
	spans := make([][2]float64, memRequests)
	for i := range spans {
		sent := t0 + 10 + float64(i)*(seconds-30)/memRequests
		done := sent + 0.2 + 0.3*rng.Float64()
		for range maxSegments {
			for range 23 + rng.IntN(5) {
				done += 0.02 + 0.01*rng.Float64()
			}
		}
		spans[i] = [2]float64{sent, done}
	}
	return pd, spans
}

// BenchmarkResidentMemory reports what the residency split
// (residentShares, what AttributeResident and SplitPhases call)
// allocates and holds at a million requests: alloc_MB, the bytes it
// allocates, and peak_live_MB, the most heap its call adds to what was
// live before (sampled every millisecond at GOGC=5, as
// BenchmarkAttributionMemory does).
func BenchmarkResidentMemory(b *testing.B) {
	pd, spans := memResident(b)
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var alloc, peak float64
	for b.Loop() {
		runtime.GC()
		base := heapObjects()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := sampleHeap()
		if _, _, err := pd.residentShares(spans, nil, true); err != nil {
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

// BenchmarkSplitPhasesMemory reports what SplitPhases (phase_energy)
// allocates and holds at a million requests (memResident's, each
// prefilling its first 0.2–0.5 s), over the whole run, as
// BenchmarkResidentMemory does.
func BenchmarkSplitPhasesMemory(b *testing.B) {
	pd, spans := memResident(b)
	reqs := make([]*record.Request, len(spans))
	all := make([]record.Request, len(spans))
	for i, sp := range spans {
		all[i] = record.Request{OK: true, SentAt: sp[0], FirstTokenAt: sp[0] + 0.2 + 0.3*float64(i%7)/7, DoneAt: sp[1]}
		reqs[i] = &all[i]
	}
	lo, hi, _, _ := pd.commonRange()
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var alloc, peak float64
	for b.Loop() {
		runtime.GC()
		base := heapObjects()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := sampleHeap()
		if _, err := pd.SplitPhases(reqs, lo, hi, MethodCounter); err != nil {
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
