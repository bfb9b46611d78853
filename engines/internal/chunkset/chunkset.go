// Package chunkset counts the distinct texts among the output chunks of a
// streamed response, so that the archive can say whether a generation was
// one token repeated without keeping the text. It is allocation-free: a
// chunk's text is hashed (64-bit FNV-1a) and the hashes are kept in a small
// fixed array.
package chunkset

// Max is the most distinct texts counted; a Counter that reached it reports
// Max (meaning Max or more).
const Max = 32

// MinChunks is the fewest content chunks a stream must have for its count
// to be recorded: with fewer, few distinct texts say nothing.
const MinChunks = 8

// Seed is the FNV-1a offset basis: the hash of no text.
const Seed uint64 = 14695981039346656037

const prime uint64 = 1099511628211

// Mix folds b into the hash h (FNV-1a).
func Mix(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}

// MixString folds s into the hash h (FNV-1a), as Mix does its bytes.
func MixString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// Counter counts the content chunks of one stream and their distinct
// texts (by hash). The zero value is ready to use; it is not safe for
// concurrent use (one stream, one goroutine).
type Counter struct {
	chunks int
	n      int
	seen   [Max]uint64
}

// Add records one content chunk whose text hashes to h.
func (c *Counter) Add(h uint64) {
	c.chunks++
	if c.n >= Max {
		return
	}
	for _, s := range c.seen[:c.n] {
		if s == h {
			return
		}
	}
	c.seen[c.n] = h
	c.n++
}

// Distinct is the number of distinct chunk texts (up to Max) when the
// stream had at least MinChunks content chunks, else 0 (not recorded).
func (c *Counter) Distinct() int {
	if c.chunks < MinChunks {
		return 0
	}
	return c.n
}
