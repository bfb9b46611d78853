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
	// fine, when not nil, is the count of the keys by their top fineBits
	// bits in each part (hist, when not nil, returns its sums by
	// radixBits bits): selectRankPairs then needs one pass more.
	fine [][]int32
	// copyMax, when not 0, replaces bucketCopyMax (in tests).
	copyMax int
}

// fineBits: the bits of the key a fine count resolves. The values of a
// run's ITL lie in a few buckets of radixBits bits, and in a few dozen
// of fineBits: the counters that are used stay in cache.
const fineBits = radixBits + 4

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
	if !finiteHist(top) {
		return 0, 0, false
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
	keys, least := copyPrefixed(v.parts, per, pshift, prefix)
	var scratch []int
	if v.hist == nil && len(v.parts) == 1 {
		scratch = top // ours to reuse
	} else {
		scratch = make([]int, 1<<radixBits)
	}
	if hi-below >= cnt {
		ka, _ := selectKeys(keys, lo-below, lo-below, pshift, scratch)
		return keyFloat(ka), keyFloat(least), true
	}
	ka, kb := selectKeys(keys, lo-below, hi-below, pshift, scratch)
	return keyFloat(ka), keyFloat(kb), true
}

// copyPrefixed returns the keys of the values whose bits from pshift up
// are prefix, per[i] of them in part i, and the least key above them
// (math.MaxUint64 when there is none). Each part copies its keys into
// its own stretch, in parallel; the order of the keys is that of no one.
func copyPrefixed(parts []chunks, per []int, pshift int, prefix uint64) (keys []uint64, least uint64) {
	// Part i writes its stretch and one spare key after it, where a key
	// without the prefix goes: every key is stored, with no branch on
	// whether it has the prefix (which would be mispredicted for a large
	// share of the keys). The stretches are closed up after.
	offs := make([]int, len(parts)+1)
	for i, c := range per {
		offs[i+1] = offs[i] + c + 1
	}
	keys = make([]uint64, offs[len(parts)])
	mins := make([]uint64, len(parts))
	forParts(parts, func(i int, part chunks) {
		dst := keys[offs[i]:offs[i+1]]
		j := 0
		m := uint64(math.MaxUint64)
		for xs := range part {
			j, m = copyKeys(dst, xs, j, m, pshift, prefix)
		}
		mins[i] = m
	})
	n := 0
	for i, c := range per {
		n += copy(keys[n:], keys[offs[i]:offs[i]+c])
	}
	return keys[:n], slices.Min(mins)
}

// copyKeys stores the keys of xs whose bits from pshift up are prefix in
// dst from j on, the others in dst's last element, and returns the next j
// and the least of m and the keys above the prefix. (A function of its
// own, so that j and m stay in registers.)
func copyKeys(dst []uint64, xs []float64, j int, m uint64, pshift int, prefix uint64) (int, uint64) {
	spare := len(dst) - 1
	for _, x := range xs {
		k := orderKey(x)
		p := k >> pshift
		in := 0
		if p == prefix {
			in = 1
		}
		// at: j for a key with the prefix (at most the spare key, should
		// the count be short), else the spare key.
		at := spare - in*(spare-min(j, spare))
		dst[at] = k
		j += in
		above := k
		if p <= prefix {
			above = math.MaxUint64
		}
		m = min(m, above)
	}
	return j, m
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

// selectKeysKeep is selectKeys that leaves keys as they are: it copies
// out only the keys of the bucket of the next radixBits bits that holds
// rank lo (a small part of them), and selects among those.
func selectKeysKeep(keys []uint64, lo, hi, shift int, hist []int) (uint64, uint64) {
	if len(keys) <= selectSortMax || shift == 0 {
		return selectKeys(slices.Clone(keys), lo, hi, shift, hist)
	}
	shift -= radixBits
	clear(hist)
	for _, k := range keys {
		hist[k>>shift&radixMask]++
	}
	bk, below := bucketOf(hist, lo)
	sub := make([]uint64, 0, hist[bk])
	next := uint64(math.MaxUint64) // the least key past the bucket
	for _, k := range keys {
		switch b := k >> shift & radixMask; {
		case b == bk:
			sub = append(sub, k)
		case b > bk && k < next:
			next = k
		}
	}
	if hi-below >= len(sub) {
		a, _ := selectKeys(sub, lo-below, lo-below, shift, hist)
		return a, next
	}
	return selectKeys(sub, lo-below, hi-below, shift, hist)
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

// selectRankPairs is selectRanksOf for several pairs of ranks (lo, hi)
// of the same values: ranks[i] gives a[i] and b[i]. With the values'
// fine count (v.fine, made with their first count), the keys of every
// fine bucket that holds a rank are copied out in one pass, shared by
// all (selectRankPairsFine); without, each pair is found on its own. ok
// is false when the values hold a NaN or an infinity.
func selectRankPairs(v values, ranks [][2]int) (a, b []float64, ok bool) {
	if v.fine != nil && v.n > selectSortMax {
		top, _ := v.hist()
		if !finiteHist(top) {
			return nil, nil, false
		}
		copyMax := bucketCopyMax
		if v.copyMax > 0 {
			copyMax = v.copyMax
		}
		return selectRankPairsFine(v, top, ranks, copyMax)
	}
	a, b = make([]float64, len(ranks)), make([]float64, len(ranks))
	for i, r := range ranks {
		if a[i], b[i], ok = selectRanksOf(v, r[0], r[1]); !ok {
			return nil, nil, false
		}
	}
	return a, b, true
}

// finiteHist reports whether a count of keys by their top radixBits bits
// has none of a NaN or an infinity: those are in the first and last 16
// buckets.
func finiteHist(top []int) bool {
	for i := range 1 << (radixBits - 12) {
		if top[i] != 0 || top[len(top)-1-i] != 0 {
			return false
		}
	}
	return true
}

// fineHists counts the keys of each part by their top fineBits bits, and
// returns those counts and a hist function for values (their sums by
// radixBits bits).
func fineHists(parts []chunks) (fine [][]int32, hist func() ([]int, [][]int)) {
	const shift = 64 - fineBits
	fine = make([][]int32, len(parts))
	perPart := make([][]int, len(parts))
	forParts(parts, func(i int, part chunks) {
		f := make([]int32, 1<<fineBits)
		for xs := range part {
			for _, x := range xs {
				f[orderKey(x)>>shift]++
			}
		}
		fine[i], perPart[i] = f, sumFine(f)
	})
	top := perPart[0]
	if len(parts) > 1 {
		top = make([]int, 1<<radixBits)
		for _, h := range perPart {
			for b, c := range h {
				top[b] += c
			}
		}
	}
	return fine, func() ([]int, [][]int) { return top, perPart }
}

// sumFine sums a fine count by radixBits bits.
func sumFine(f []int32) []int {
	h := make([]int, 1<<radixBits)
	for fb, c := range f {
		h[fb>>(fineBits-radixBits)] += int(c)
	}
	return h
}

// selectRankPairsFine is selectRankPairs given the fine count of the
// values (v.fine) and top, the count by radixBits bits it sums to: the
// keys of the fine buckets that hold a rank are copied out in one pass.
func selectRankPairsFine(v values, top []int, ranks [][2]int, copyMax int) (a, b []float64, ok bool) {
	a, b = make([]float64, len(ranks)), make([]float64, len(ranks))
	const per = 1 << (fineBits - radixBits) // fine buckets per bucket
	// fineOf returns the fine bucket of rank r, the keys before it and in it.
	fineOf := func(r int) (fb, below, count int) {
		bk, below := bucketOf(top, r)
		for fb = int(bk) * per; ; fb++ {
			count = 0
			for _, h := range v.fine {
				count += int(h[fb])
			}
			if below+count > r {
				return fb, below, count
			}
			below += count
		}
	}
	type rank struct {
		r, below, fb int
	}
	rs := make([][2]rank, len(ranks))
	byOne := make([]bool, len(ranks))
	slot := map[int]int{} // fine bucket → index in fbs
	var fbs []int
	for i, pr := range ranks {
		for j := range 2 {
			fb, below, count := fineOf(pr[j])
			rs[i][j] = rank{r: pr[j], below: below, fb: fb}
			if count > copyMax {
				byOne[i] = true
			}
		}
		if byOne[i] || len(fbs)+2 > math.MaxUint8 {
			byOne[i] = true
			continue
		}
		for _, r := range rs[i] {
			if _, ok := slot[r.fb]; !ok {
				slot[r.fb] = len(fbs)
				fbs = append(fbs, r.fb)
			}
		}
	}
	// Part i's keys of fine bucket fbs[p] go to keys[p][start[i][p+1]:].
	ptab := make([]uint8, 1<<fineBits)
	keys := make([][]uint64, len(fbs))
	start := make([][]int, len(v.parts))
	for i := range start {
		start[i] = make([]int, len(fbs)+1)
	}
	for p, fb := range fbs {
		ptab[fb] = uint8(p + 1)
		n := 0
		for i, h := range v.fine {
			start[i][p+1] = n
			n += int(h[fb])
		}
		keys[p] = make([]uint64, n)
	}
	if len(fbs) > 0 {
		forParts(v.parts, func(i int, part chunks) {
			pos := start[i]
			for xs := range part {
				copyFine(keys, pos, xs, ptab)
			}
		})
	}
	scratch := make([]int, 1<<radixBits)
	find := func(r rank) uint64 {
		// The keys of a fine bucket share their top radixBits bits.
		k, _ := selectKeysKeep(keys[slot[r.fb]], r.r-r.below, r.r-r.below, 64-radixBits, scratch)
		return k
	}
	for i := range rs {
		if byOne[i] {
			if a[i], b[i], ok = selectRanksOf(v, ranks[i][0], ranks[i][1]); !ok {
				return nil, nil, false
			}
			continue
		}
		a[i], b[i] = keyFloat(find(rs[i][0])), keyFloat(find(rs[i][1]))
	}
	return a, b, true
}

// copyFine stores each key of xs whose top fineBits bits have a slot
// p ≥ 1 in ptab at keys[p-1][pos[p]], and moves pos[p] on. Few keys have
// one: the branch is predicted.
func copyFine(keys [][]uint64, pos []int, xs []float64, ptab []uint8) {
	for _, x := range xs {
		k := orderKey(x)
		if p := ptab[k>>(64-fineBits)]; p != 0 {
			ks := keys[p-1]
			if j := pos[p]; j < len(ks) {
				ks[j] = k
				pos[p] = j + 1
			}
		}
	}
}

// radixSortMin is the shortest list sortedDistinct sorts by radix.
const radixSortMin = 1 << 12

// sortedDistinct returns the distinct numbers whose keys (orderKey of
// finite numbers) are keys, in ascending order, as slices.Sort and
// slices.Compact would: -0 and +0 are one number, the first in order. It
// sorts keys (a long list by radix, sortKeys) and may use their array;
// what it holds at once is keys, their scratch and then the result,
// never a list of the numbers beside the two lists of keys.
func sortedDistinct(keys []uint64) []float64 {
	if len(keys) < radixSortMin {
		xs := make([]float64, len(keys))
		for i, k := range keys {
			xs[i] = keyFloat(k)
		}
		slices.Sort(xs)
		return slices.Compact(xs)
	}
	keys = sortKeys(keys, make([]uint64, len(keys)))
	n := 0
	for i, k := range keys {
		if i == 0 || keyFloat(k) != keyFloat(keys[i-1]) {
			n++
		}
	}
	out := make([]float64, 0, n)
	for i, k := range keys {
		if x := keyFloat(k); i == 0 || x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// sortKeys sorts keys in ascending order by an LSD radix sort, a byte at
// a time, skipping the bytes that all keys share: the times of a run
// differ in their low five or so bytes only, so that this is a few passes
// instead of a comparison sort's n log n comparisons. tmp, as long as
// keys, is its scratch; it returns the sorted keys, in keys' array or
// tmp's.
func sortKeys(keys, tmp []uint64) []uint64 {
	// No tags: a list of struct{} takes no memory.
	none := make([]struct{}, len(keys))
	keys, _, _, _ = radixSort(keys, none, tmp, none)
	return keys
}

// radixSort sorts keys in ascending order as sortKeys says, stable, each
// tag moved with its key (attribution's segment ends carry their
// request's index; sortKeys' keys carry nothing). kt and tt, as long as
// keys, are its scratch; it returns the sorted lists and the scratch,
// each in keys' arrays or the scratch's.
func radixSort[T any](keys []uint64, tags []T, kt []uint64, tt []T) ([]uint64, []T, []uint64, []T) {
	if len(keys) == 0 {
		return keys, tags, kt, tt
	}
	first := keys[0]
	var differ uint64 // the bits in which some key differs from the first
	for _, k := range keys {
		differ |= k ^ first
	}
	var count [256]int
	for shift := 0; shift < 64; shift += 8 {
		if differ>>shift&0xff == 0 {
			continue
		}
		count = [256]int{}
		for _, k := range keys {
			count[k>>shift&0xff]++
		}
		at := 0
		for b, c := range count {
			count[b] = at
			at += c
		}
		for i, k := range keys {
			b := k >> shift & 0xff
			kt[count[b]], tt[count[b]] = k, tags[i]
			count[b]++
		}
		keys, kt, tags, tt = kt, keys, tt, tags
	}
	return keys, tags, kt, tt
}
