package measure

import "sort"

// memRuns is a device's memory used (bytes, -1 when unknown), sample by
// sample, held as runs of equal values: a sampled GPU's memory is the
// same for hours at a time (the engine allocates its KV cache at startup
// and frees it at release), so a run of 360,000 samples holds a few runs
// (12 bytes each) instead of 8 bytes a sample.
type memRuns struct {
	n     int     // samples
	start []int32 // the first sample of each run, ascending from 0
	val   []int64 // each run's value
}

// appendMem adds the value of the next sample.
func (m *memRuns) appendMem(v int64) {
	if len(m.val) == 0 || m.val[len(m.val)-1] != v {
		m.start, m.val = append(m.start, int32(m.n)), append(m.val, v)
	}
	m.n++
}

// run is the index of the run holding sample i (0 ≤ i < n).
func (m *memRuns) run(i int) int {
	return sort.Search(len(m.start), func(r int) bool { return int(m.start[r]) > i }) - 1
}

// at is sample i's value.
func (m *memRuns) at(i int) int64 { return m.val[m.run(i)] }

// maxIn is the largest value of the samples [lo, hi), -1 when there are
// none.
func (m *memRuns) maxIn(lo, hi int) int64 {
	best := int64(-1)
	if lo >= hi {
		return best
	}
	for r := m.run(lo); r < len(m.start) && int(m.start[r]) < hi; r++ {
		best = max(best, m.val[r])
	}
	return best
}

// lastKnownBefore is the value of the last sample before i whose value is
// known (≥ 0), -1 when there is none.
func (m *memRuns) lastKnownBefore(i int) int64 {
	if i <= 0 {
		return -1
	}
	for r := m.run(min(i, m.n) - 1); r >= 0; r-- {
		if m.val[r] >= 0 {
			return m.val[r]
		}
	}
	return -1
}
