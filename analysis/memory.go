package analysis

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Evaluating a long run holds its data (tens of millions of token times)
// while formulas allocate and drop lists about a tenth of its size.
// Go's collector lets the heap grow to twice what was live after the last
// collection (GOGC=100), so the peak would be about twice the data. During
// evaluation a soft memory limit of evalMemHeadroom times the data loaded
// (measured after a collection) keeps the peak near what is needed; the
// collector then runs more often, which costs little here since the bulk
// of the data (float lists) has no pointers to scan. The limit is soft: a
// formula that needs more gets it (the runtime bounds the collector's
// share of CPU). A limit set by the user (GOMEMLIMIT) is left alone, and
// so are runs whose data is small.
//
// 1.70 keeps analyze of the large benchmark run (cmd/joulebench's
// BenchmarkAnalyzeLarge) at a peak RSS of 378–381 MiB with 2–3
// collections during evaluation, as 1.85 had before evaluation held and
// allocated less (issue 32: attribution's pieces a block at a time, VM
// stacks sized for the requests; 230 → 196–201 MiB allocated): the same
// CPU as 1.85 then, at 403–411 MiB. Below 1.70 the collector runs more
// often (1.68: 3–4 collections, 1.65: 4–5). The peak RSS is the limit
// and some 30 MiB more (the program's own pages).
//
// 2.40 since the token times went to a temporary file (issue 46): the
// data loaded no longer holds them, and what evaluation builds on it
// (the shapes, attribution's pieces) reached 2.3 × the data at 100,000
// and at 1,000,000 requests. At 1.70 the limit (800 MiB at a million)
// was below the evaluation's live set (1,078 MiB), the collector ran
// back to back through attribution, and analyze of the million took
// 63–81 s of CPU; at 2.40, 58 s, for the same peak RSS (1.26–1.29 GB).
//
// 2.00 since evaluation holds less (issue 46: attribution a block at a
// time, segments and memory compact, long derived lists as []float64 or
// []*record.Request, the decoder's strings in an arena): at a million
// requests 524 MiB are live when evaluation starts (the power rows
// included, which it frees) and at most 703 MiB during it (1.34 ×).
// analyze of that run, two runs each on an idle 2-core VM: 2.40 gave a
// peak RSS of 943–984 MiB for 35.8–37.2 s of CPU; 2.00, 892 MiB for
// 31.5–36.9 s; 1.80, 806 MiB for 38.5–41.2 s (the collector runs more
// often); 1.50–1.70, 812–832 MiB for 38–41 s. The limit also makes the
// runtime return freed memory sooner, which is most of the difference
// in RSS: the live set is the same at every factor.
const (
	evalMemHeadroom = 2.00
	// evalMemMinBytes: below this heap size no limit is set (nor the
	// collection run that measures the data).
	evalMemMinBytes = 64 << 20
	// loadGCPercent is GOGC while an archive is loaded and evaluated
	// (limitLoadMemory).
	loadGCPercent = 25
)

// LimitEvalMemory sets the soft memory limit for an evaluation of the
// data now loaded and returns the function that restores the previous
// limit.
func LimitEvalMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if heapMetric("/memory/classes/heap/objects:bytes") < evalMemMinBytes {
		return func() {}
	}
	runtime.GC()
	live := heapMetric("/gc/heap/live:bytes")
	if live < evalMemMinBytes {
		return func() {}
	}
	old := debug.SetMemoryLimit(int64(float64(live) * evalMemHeadroom))
	return func() { debug.SetMemoryLimit(old) }
}

// heapMetric reads one uint64 metric of the runtime (0 when it has none).
func heapMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// limitLoadMemory sets the collector's target (GOGC) to loadGCPercent
// while an archive is loaded and indexed, and returns the function that
// restores it (once; later calls do nothing). Loading grows the heap
// from nothing to the run's data, so at GOGC=100 it may reach twice what
// it holds before the evaluation's limit is set: 221 MiB for the 111
// MiB of the 100,000-request benchmark run. At 25 its peak stays below
// the evaluation's (197 MiB; peak RSS 262 → 247 MiB), for 0.5–1 s more
// CPU in the collector. analyze keeps it through the evaluation (issue
// 46): with the token times in a temporary file the data loaded is
// smaller than what evaluation builds on it (2.3 × at 100,000 and at
// 1,000,000 requests), and below evalMemMinBytes at 100,000, where
// GOGC=100 let the evaluation's heap reach twice its live set. A GOGC or
// GOMEMLIMIT set by the user is left alone.
func limitLoadMemory() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(loadGCPercent)
	return sync.OnceFunc(func() { debug.SetGCPercent(old) })
}
