package workload

import (
	"fmt"
	"unsafe"
)

// perRequestRunBytes is what one request costs a run beyond its prompt:
// the neutral request, the load generator's bookkeeping and the record
// archived (ids, times, counts; token times are extra and not counted).
// An estimate, on the low side, so that a refusal is certain to be right.
const perRequestRunBytes = 512

// promptBytes estimates the memory one request of all takes: the Prompt
// itself, its id, and its text as JSON (the request body in flight and its
// share of the canonical JSON the sha256 is computed over, which is
// hashed prompt by prompt and never held whole). JSON escapes a quote, a
// backslash and a control character in two to six bytes, and <, >, & in
// six: a prompt's JSON can be six times its text.
func promptBytes(all []Prompt) int64 {
	var text int64
	for i := range all {
		p := &all[i]
		text += int64(len(p.ID)+jsonLen(p.Prompt)) + 64
		for _, m := range p.Messages {
			text += int64(len(m.Role)+jsonLen(m.Content)) + 32
		}
	}
	avg := text / int64(max(len(all), 1))
	return int64(unsafe.Sizeof(Prompt{})) + 16 + avg
}

// jsonLen is the length of s as a JSON string's contents, as
// encoding/json writes it (HTML characters escaped; a non-ASCII byte
// counted as itself, which an invalid one or U+2028 is not: on the low
// side).
func jsonLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}

// checkMemory refuses a request set of n prompts drawn from all that would
// not fit in the memory available, before anything is allocated for it.
// avail is opt.MemoryAvailable, or the system's figure when that is 0; a
// negative value, or none known, turns the check off.
func checkMemory(all []Prompt, n int, source string, avail int64) error {
	if avail == 0 {
		var ok bool
		if avail, ok = availableMemory(); !ok {
			return nil
		}
	}
	if avail < 0 || n <= 0 {
		return nil
	}
	per := promptBytes(all) + perRequestRunBytes
	// n·per could overflow int64 only for n far above any memory; compare
	// by division.
	if int64(n) <= avail/per {
		return nil
	}
	need := float64(n) * float64(per)
	return fmt.Errorf("%s: %d requests need an estimated %s of memory (about %d bytes each: the prompt, its JSON and the run's record), more than the limit of %s available to this process (MemAvailable, lowered to the cgroup's memory.max); ask for fewer requests or shorter prompts",
		source, n, byteText(need), per, byteText(float64(avail)))
}

// byteText writes a byte count in GiB or MiB.
func byteText(b float64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", b/(1<<20))
}

// CheckRequests refuses sending the set as n requests (its prompts sent
// again and again, as a step with repeat does) when they would not fit in
// the memory available (Options.MemoryAvailable, else the system's): the
// set itself was checked for its own prompts when it was frozen, but each
// request in flight holds its body, so the run needs the prompt's bytes
// per request.
func (s *RequestSet) CheckRequests(n int) error {
	if n <= len(s.Prompts) {
		return nil
	}
	return checkMemory(s.Prompts, n, s.Source, s.Options.MemoryAvailable)
}
