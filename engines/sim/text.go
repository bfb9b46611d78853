package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
)

// words are the sim's vocabulary: short plausible words, ~4.5 characters a
// token with the leading space, so chars/4 estimates stay close to the
// true token count.
var words = []string{
	"the", "model", "energy", "token", "power", "request", "data", "system",
	"value", "result", "time", "query", "answer", "graph", "node", "state",
	"cache", "batch", "input", "output", "layer", "memory", "signal", "index",
	"of", "and", "to", "in", "is", "for", "with", "on",
	"that", "this", "each", "from", "by", "as", "are", "we",
	"can", "will", "then", "also", "more", "less", "high", "low",
	"fast", "small", "large", "first", "next", "last", "new", "same",
	"code", "test", "run", "step", "rate", "load", "peak", "mean",
}

// seqRNG returns the generator for one request: the same seed, endpoint,
// prompt and limits always give the same tokens and stop length.
func seqRNG(seed int64, kind, prompt string, maxTokens int, ignoreEOS bool) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(prompt))
	binary.LittleEndian.PutUint64(b[:], uint64(maxTokens))
	h.Write(b[:])
	if ignoreEOS {
		h.Write([]byte{1})
	}
	return rand.New(rand.NewPCG(h.Sum64(), uint64(seed)^0x6a09e667f3bcc909))
}

// nextToken draws the text of token number n (0-based).
func nextToken(r *rand.Rand, n int) string {
	if n > 0 && r.IntN(12) == 0 {
		if r.IntN(2) == 0 {
			return ","
		}
		return "."
	}
	w := words[r.IntN(len(words))]
	if n == 0 {
		return w
	}
	return " " + w
}

// promptTokens estimates a prompt's tokens as chars/4, at least 1.
func promptTokens(chars int) int {
	n := (chars + 3) / 4
	if n < 1 {
		n = 1
	}
	return n
}
