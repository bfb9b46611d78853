package sim

import (
	"container/list"
	"hash/maphash"
	"sync"
)

// PrefixBlockTokens is the simulator's prefix-cache block: like vLLM's
// automatic prefix caching, a prompt is cached and matched in whole blocks
// of 16 tokens, i.e. PrefixBlockTokens·4 characters of its text (the
// simulator counts a token per 4 characters, see promptTokens).
const PrefixBlockTokens = 16

// prefixBlockChars is a block's length in characters of prompt text.
const prefixBlockChars = PrefixBlockTokens * 4

// prefixCache models an engine's prefix cache: the blocks of the prompts
// it has prefilled, each named by a hash chained over the blocks before it
// (so a block only matches after the same prefix), evicted least recently
// used beyond capacity blocks. A request's cached tokens are its leading
// blocks found in the cache, at most all its prompt tokens but one (the
// last prompt token is always computed, as in vLLM). Cached tokens skip
// prefill: their time (tokens / PrefillTokPerS) and so its energy.
//
// The text is the prompt, or a chat request's message contents joined
// (roles and templates are not modelled); generated tokens are not cached.
type prefixCache struct {
	seed     maphash.Seed
	capacity int // blocks

	mu    sync.Mutex
	lru   *list.List               // of uint64 block hashes, most recent first
	index map[uint64]*list.Element // block hash -> its element
}

func newPrefixCache(capacityTokens int) *prefixCache {
	return &prefixCache{
		seed:     maphash.MakeSeed(),
		capacity: max(1, capacityTokens/PrefixBlockTokens),
		lru:      list.New(),
		index:    map[uint64]*list.Element{},
	}
}

// blocks returns the chained hashes of text's whole blocks.
func (c *prefixCache) blocks(text string) []uint64 {
	n := len(text) / prefixBlockChars
	out := make([]uint64, n)
	var prev uint64
	for i := range n {
		var h maphash.Hash
		h.SetSeed(c.seed)
		var b [8]byte
		for k := range b {
			b[k] = byte(prev >> (8 * k))
		}
		h.Write(b[:])
		h.WriteString(text[i*prefixBlockChars : (i+1)*prefixBlockChars])
		prev = h.Sum64()
		out[i] = prev
	}
	return out
}

// admit returns how many of a prompt's ptoks tokens are cached, and caches
// all its whole blocks (touching the ones found).
func (c *prefixCache) admit(text string, ptoks int) int {
	hs := c.blocks(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for hit < len(hs) {
		if _, ok := c.index[hs[hit]]; !ok {
			break
		}
		hit++
	}
	for _, h := range hs {
		if e, ok := c.index[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.index[h] = c.lru.PushFront(h)
		for c.lru.Len() > c.capacity {
			old := c.lru.Back()
			delete(c.index, old.Value.(uint64))
			c.lru.Remove(old)
		}
	}
	return max(0, min(hit*PrefixBlockTokens, ptoks-1))
}
