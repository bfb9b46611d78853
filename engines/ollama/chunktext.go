package ollama

import "github.com/joulebench/joulebench/engines/internal/chunkset"

// lineHash is the hash of a stream line's output text (response and
// thinking, or the message's content and thinking), for the count of
// distinct chunk texts (record.Request.DistinctChunks). A zero byte
// separates the parts so that ("ab", "") and ("a", "b") differ.
func lineHash(l line) uint64 {
	h := chunkset.MixString(chunkset.Seed, l.Response)
	h = chunkset.Mix(h, []byte{0})
	h = chunkset.MixString(h, l.Thinking)
	if l.Message != nil {
		h = chunkset.Mix(h, []byte{0})
		h = chunkset.MixString(h, l.Message.Content)
		h = chunkset.Mix(h, []byte{0})
		h = chunkset.MixString(h, l.Message.Thinking)
	}
	return h
}
