package measure

import (
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
)

// Percentiles of long lists (the inter-token latencies of a long run are
// tens of millions of values) are found by selection rather than by
// sorting a copy: a radix select over the bits of the numbers. One pass
// counts the list's keys by their top 16 bits; a second copies out the keys
// of the bucket that holds the wanted rank (a small part of the list), and
// the same is repeated on that copy, in place, 16 bits further down, until
// few enough remain to sort.

const (
	// selectSortMax: a list this short is copied and sorted.
	selectSortMax = 1 << 12
	// radixBits: the bits of the key a pass of the radix select resolves.
	radixBits = 16
	radixMask = 1<<radixBits - 1
	// bucketCopyMax: a bucket of more keys than this (32 MiB of them) is
	// narrowed by a second count before its keys are copied out. Smaller
	// ones are copied: a pass over a long computed list (ITLValues) costs
	// more than the copy.
	bucketCopyMax = 1 << 22
)

// orderKey maps a float64 to a key whose unsigned order is the numeric
// order of the floats (-0 just before +0), and keyFloat maps it back.
func orderKey(x float64) uint64 {
	b := math.Float64bits(x)
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

func keyFloat(k uint64) float64 {
	if k&(1<<63) != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// finiteKey reports whether a key is that of a finite number: NaN and
// ±Inf have an all-ones exponent, the top 12 bits of the key all ones
// (positive) or all zeros (negative).
func finiteKey(k uint64) bool {
	top := k >> 52
	return top != 0 && top != 1<<12-1
}

// chunks yields a list of numbers in order, a piece at a time; a piece is
// valid only during the call that receives it. A list held in memory is
// one piece (sliceChunks); a list computed on the fly (ITLValues) fills a
// small buffer again and again, so that it is never held whole.
type chunks = iter.Seq[[]float64]

func sliceChunks(xs []float64) chunks {
	return func(yield func([]float64) bool) { yield(xs) }
}

// values is a list of n numbers read in passes: all yields them in order;
// parts, which together yield them all, are read in parallel by the passes
// whose result does not depend on order. hist, when not nil, returns
// partHists(parts), counted once and kept (its slices are not modified).
type values struct {
	n     int
	all   chunks
	parts []chunks
	hist  func() (top []int, perPart [][]int)
	// copyMax, when not 0, replaces bucketCopyMax (in tests).
	copyMax int
}

// parallelMin is the fewest values per part worth a goroutine.
const parallelMin = 1 << 16

// sliceValues is xs as values, in up to GOMAXPROCS parts when it is long.
func sliceValues(xs []float64) values {
	v := values{n: len(xs), all: sliceChunks(xs)}
	p := min(runtime.GOMAXPROCS(0), len(xs)/parallelMin)
	if p <= 1 {
		v.parts = []chunks{v.all}
		return v
	}
	for i := range p {
		v.parts = append(v.parts, sliceChunks(xs[i*len(xs)/p:(i+1)*len(xs)/p]))
	}
	return v
}

// forParts calls f for each part, in parallel when there are several.
func forParts(parts []chunks, f func(i int, part chunks)) {
	if len(parts) == 1 {
		f(0, parts[0])
		return
	}
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { f(i, p) })
	}
	wg.Wait()
}

// partHists counts the keys of the values by their top radixBits bits,
// in total and per part.
func partHists(parts []chunks) (top []int, perPart [][]int) {
	const shift = 64 - radixBits
	perPart = make([][]int, len(parts))
	forParts(parts, func(i int, part chunks) {
		hist := make([]int, 1<<radixBits)
		for xs := range part {
			for _, x := range xs {
				hist[orderKey(x)>>shift]++
			}
		}
		perPart[i] = hist
	})
	if len(parts) == 1 {
		return perPart[0], perPart
	}
	top = make([]int, 1<<radixBits)
	for _, h := range perPart {
		for b, c := range h {
			top[b] += c
		}
	}
	return top, perPart
}

// selectRanks returns the elements of rank lo and hi (0-based, hi is lo
// or lo+1) of xs in ascending order, without modifying xs; ok is false
// when xs holds a NaN or an infinity.
func selectRanks(xs []float64, lo, hi int) (a, b float64, ok bool) {
	return selectRanksOf(sliceValues(xs), lo, hi)
}

// selectRanksOf is selectRanks of v. The values are read once to count
// them (unless v.hist has), once more to copy out the bucket of rank lo,
// and once more when rank hi is in a later bucket.
func selectRanksOf(v values, lo, hi int) (a, b float64, ok bool) {
	if v.n <= selectSortMax {
		keys := make([]uint64, 0, v.n)
		for xs := range v.all {
			for _, x := range xs {
				keys = append(keys, orderKey(x))
			}
		}
		slices.Sort(keys)
		if !finiteKey(keys[0]) || !finiteKey(keys[len(keys)-1]) {
			return 0, 0, false
		}
		return keyFloat(keys[lo]), keyFloat(keys[hi]), true
	}
	const shift = 64 - radixBits
	var top []int
	var perPart [][]int
	if v.hist != nil {
		top, perPart = v.hist()
	} else {
		top, perPart = partHists(v.parts)
	}
	// Non-finite keys are in the first and last 16 buckets.
	for i := range 1 << (radixBits - 12) {
		if top[i] != 0 || top[len(top)-1-i] != 0 {
			return 0, 0, false
		}
	}
	bk, below := bucketOf(top, lo)
	// The keys to copy out: those whose bits from pshift up are prefix
	// (count of them: cnt, per part: per; ranks below them: below).
	pshift, prefix, cnt := shift, bk, top[bk]
	per := make([]int, len(v.parts))
	for i, h := range perPart {
		per[i] = h[bk]
	}
	copyMax := bucketCopyMax
	if v.copyMax > 0 {
		copyMax = v.copyMax
	}
	if cnt > copyMax {
		// A large bucket is narrowed first by a count of its keys by the
		// next radixBits bits: one more pass instead of a large copy.
		pshift -= radixBits
		sub := make([][]int, len(v.parts))
		forParts(v.parts, func(i int, part chunks) {
			h := make([]int, 1<<radixBits)
			for xs := range part {
				for _, x := range xs {
					if k := orderKey(x); k>>shift == bk {
						h[k>>pshift&radixMask]++
					}
				}
			}
			sub[i] = h
		})
		total := make([]int, 1<<radixBits)
		for _, h := range sub {
			for b, c := range h {
				total[b] += c
			}
		}
		sb, subBelow := bucketOf(total, lo-below)
		prefix, cnt, below = bk<<radixBits|sb, total[sb], below+subBelow
		for i, h := range sub {
			per[i] = h[sb]
		}
	}
	// Each part copies its keys with the prefix into its own stretch of
	// keys (the order of the keys does not matter to the selection), and
	// finds the least key above them, which is rank hi when hi is past
	// them.
	keys := make([]uint64, cnt)
	offs := make([]int, len(v.parts)+1)
	for i, c := range per {
		offs[i+1] = offs[i] + c
	}
	mins := make([]uint64, len(v.parts))
	forParts(v.parts, func(i int, part chunks) {
		dst := keys[offs[i]:offs[i+1]]
		j := 0
		m := uint64(math.MaxUint64)
		for xs := range part {
			for _, x := range xs {
				k := orderKey(x)
				switch p := k >> pshift; {
				case p == prefix && j < len(dst):
					dst[j] = k
					j++
				case p > prefix && k < m:
					m = k
				}
			}
		}
		mins[i] = m
	})
	var scratch []int
	if v.hist == nil && len(v.parts) == 1 {
		scratch = top // ours to reuse
	} else {
		scratch = make([]int, 1<<radixBits)
	}
	if hi-below >= cnt {
		ka, _ := selectKeys(keys, lo-below, lo-below, pshift, scratch)
		return keyFloat(ka), keyFloat(slices.Min(mins)), true
	}
	ka, kb := selectKeys(keys, lo-below, hi-below, pshift, scratch)
	return keyFloat(ka), keyFloat(kb), true
}

// bucketOf returns the bucket of hist that holds rank r, and how many
// are in the buckets before it.
func bucketOf(hist []int, r int) (b uint64, below int) {
	for below+hist[b] <= r {
		below += hist[b]
		b++
	}
	return b, below
}

// selectKeys returns the keys of rank lo and hi (hi is lo or lo+1, both
// in keys) of keys, whose bits from shift up are all the same. It reorders
// keys and uses hist (1<<radixBits counters) as scratch space.
func selectKeys(keys []uint64, lo, hi, shift int, hist []int) (uint64, uint64) {
	for len(keys) > selectSortMax && shift > 0 {
		shift -= radixBits
		clear(hist)
		for _, k := range keys {
			hist[k>>shift&radixMask]++
		}
		bk, below := bucketOf(hist, lo)
		if hi >= below+hist[bk] { // hi is the first key past the bucket
			next := uint64(math.MaxUint64)
			for _, k := range keys {
				if k>>shift&radixMask > bk && k < next {
					next = k
				}
			}
			a, _ := selectKeys(keep(keys, bk, shift), lo-below, lo-below, shift, hist)
			return a, next
		}
		keys = keep(keys, bk, shift)
		lo, hi = lo-below, hi-below
	}
	slices.Sort(keys)
	return keys[lo], keys[hi]
}

// keep moves the keys whose bits shift..shift+radixBits-1 are b to the
// front of keys, in place, and returns them.
func keep(keys []uint64, b uint64, shift int) []uint64 {
	n := 0
	for _, k := range keys {
		if k>>shift&radixMask == b {
			keys[n] = k
			n++
		}
	}
	return keys[:n]
}
