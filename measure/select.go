package measure

import (
	"math"
	"slices"
)

// Percentiles of long lists (the inter-token latencies of a long run are
// tens of millions of values) are found by selection rather than by
// sorting a copy: a radix select over the bits of the numbers, which
// reads the list a few times and copies only the few elements that share
// the wanted rank's leading bits.

const (
	// selectSortMax: a list this short is copied and sorted.
	selectSortMax = 1 << 12
	// radixBits: the bits of the key a pass of the radix select resolves.
	radixBits = 16
	// gatherMax: when at most this many elements share the leading bits
	// resolved so far, they are copied and sorted.
	gatherMax = 1 << 14
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

// selectRanks returns the elements of rank lo and hi (0-based, hi is lo
// or lo+1) of xs in ascending order, without modifying xs. xs holds no NaN.
func selectRanks(xs []float64, lo, hi int) (float64, float64) {
	if len(xs) <= selectSortMax {
		keys := make([]uint64, len(xs))
		for i, x := range xs {
			keys[i] = orderKey(x)
		}
		slices.Sort(keys)
		return keyFloat(keys[lo]), keyFloat(keys[hi])
	}
	const mask = 1<<radixBits - 1
	hist := make([]int, 1<<radixBits)
	var prefix uint64 // the bits of the wanted key resolved so far
	below := 0        // how many keys are below every key with that prefix
	for shift := 64 - radixBits; ; shift -= radixBits {
		// Count the keys with the prefix by their next radixBits bits.
		top := uint(shift + radixBits) // a shift by 64 gives 0: no prefix yet
		clear(hist)
		for _, x := range xs {
			if k := orderKey(x); k>>top == prefix>>top {
				hist[k>>shift&mask]++
			}
		}
		b := 0
		for below+hist[b] <= lo {
			below += hist[b]
			b++
		}
		prefix |= uint64(b) << shift
		count := hist[b]
		switch {
		case shift == 0: // count keys equal to prefix
			a := keyFloat(prefix)
			if hi < below+count {
				return a, a
			}
			return a, keyFloat(nextKey(xs, prefix))
		case count <= gatherMax:
			buf := make([]uint64, 0, count)
			for _, x := range xs {
				if k := orderKey(x); k>>shift == prefix>>shift {
					buf = append(buf, k)
				}
			}
			slices.Sort(buf)
			a := keyFloat(buf[lo-below])
			if hi-below < len(buf) {
				return a, keyFloat(buf[hi-below])
			}
			return a, keyFloat(nextKey(xs, prefix|(1<<shift-1)))
		}
	}
}

// nextKey returns the smallest key of xs above k; the caller knows there
// is one.
func nextKey(xs []float64, k uint64) uint64 {
	next := uint64(math.MaxUint64)
	for _, x := range xs {
		if kx := orderKey(x); kx > k && kx < next {
			next = kx
		}
	}
	return next
}
