package workload

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// PrefixPrefix introduces the shared-prefix set in a dataset name:
// prefix:prefixes=N,prefix_len=L,suffix_len=S,output_len=O (see
// ParsePrefixSpec), like vLLM's prefix-repetition dataset.
const PrefixPrefix = "prefix:"

// PrefixSpec describes the shared-prefix set: Prefixes texts of PrefixLen
// tokens, each shared by a group of requests (request i takes prefix
// i mod Prefixes), and per request a suffix of SuffixLen tokens of its own
// and OutputLen tokens to generate (sent with ignore_eos). Lengths are in
// words, about a token each in the served model (LengthEstimate).
type PrefixSpec struct {
	Prefixes, PrefixLen, SuffixLen, OutputLen int
}

// String is the spec as a dataset name.
func (s PrefixSpec) String() string {
	return fmt.Sprintf("%sprefixes=%d,prefix_len=%d,suffix_len=%d,output_len=%d", PrefixPrefix, s.Prefixes, s.PrefixLen, s.SuffixLen, s.OutputLen)
}

// IsPrefix reports whether a dataset name is the shared-prefix set.
func IsPrefix(name string) bool { return strings.HasPrefix(name, PrefixPrefix) }

// ParsePrefixSpec reads "prefix:" and its parameters; missing ones take the
// defaults (4 prefixes of 1024 tokens, suffixes of 64, outputs of 128).
func ParsePrefixSpec(name string) (PrefixSpec, error) {
	if !IsPrefix(name) {
		return PrefixSpec{}, fmt.Errorf("shared-prefix set %q: want %sprefixes=N,prefix_len=L,suffix_len=S,output_len=O", name, PrefixPrefix)
	}
	s := PrefixSpec{Prefixes: 4, PrefixLen: 1024, SuffixLen: 64, OutputLen: 128}
	rest := strings.TrimPrefix(name, PrefixPrefix)
	if rest == "" {
		return s, nil
	}
	for _, p := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(p, "=")
		dst := map[string]*int{"prefixes": &s.Prefixes, "prefix_len": &s.PrefixLen, "suffix_len": &s.SuffixLen, "output_len": &s.OutputLen}[k]
		if !ok || dst == nil {
			return PrefixSpec{}, fmt.Errorf("shared-prefix set %q: %q: want prefixes=, prefix_len=, suffix_len= or output_len=", name, p)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxTraceTokens {
			return PrefixSpec{}, fmt.Errorf("shared-prefix set %q: %s=%s: want a whole number in [0, %d]", name, k, v, MaxTraceTokens)
		}
		*dst = n
	}
	if s.Prefixes < 1 || s.OutputLen < 1 || s.PrefixLen+s.SuffixLen < 1 {
		return PrefixSpec{}, fmt.Errorf("shared-prefix set %q: want prefixes >= 1, output_len >= 1 and a prompt of at least 1 token", name)
	}
	return s, nil
}

// wordText returns n words of randomWords drawn from a generator seeded by
// (seed, stream): the same pair gives the same text.
func wordText(n int, seed int64, stream uint64) string {
	src := rand.NewPCG(uint64(seed), stream)
	var b strings.Builder
	for w := 0; w < n; w++ {
		if w > 0 {
			b.WriteByte(' ')
		}
		hi, _ := bits.Mul64(src.Uint64(), uint64(len(randomWords)))
		b.WriteString(randomWords[hi])
	}
	return b.String()
}

// SharedPrefix generates the shared-prefix set: opt.Count requests
// (DefaultRandomCount when 0) drawn with opt.Seed. Prompt i is prefix
// (i mod Prefixes) followed by its own suffix.
func SharedPrefix(spec PrefixSpec, opt Options) (*RequestSet, error) {
	if err := opt.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	n := opt.Count
	if n == 0 {
		n = DefaultRandomCount
	}
	approx := Prompt{Prompt: strings.Repeat("x", 6*(spec.PrefixLen+spec.SuffixLen))}
	if err := checkMemory([]Prompt{approx}, n, spec.String(), opt.MemoryAvailable); err != nil {
		return nil, err
	}
	prefixes := make([]string, spec.Prefixes)
	for k := range prefixes {
		prefixes[k] = wordText(spec.PrefixLen, opt.Seed, uint64(k)<<1)
	}
	prompts := make([]Prompt, n)
	for i := range prompts {
		text := prefixes[i%spec.Prefixes]
		if suffix := wordText(spec.SuffixLen, opt.Seed, uint64(i)<<1|1); suffix != "" {
			if text != "" {
				text += " "
			}
			text += suffix
		}
		prompts[i] = Prompt{ID: fmt.Sprintf("prefix-%d-%d", i%spec.Prefixes+1, i+1), Prompt: text, MaxTokens: spec.OutputLen}
	}
	opt.Format = FormatJSONL
	opt.Count = n
	opt.Shuffle, opt.Repeat = false, false
	opt.IgnoreEOS = true
	opt.MaxTokensCap = max(opt.MaxTokensCap, DefaultMaxTokensCap, spec.OutputLen)
	set, err := freeze(prompts, 0, spec.String(), opt)
	if err != nil {
		return nil, err
	}
	set.Options.Seed = opt.Seed
	set.LengthMethod = LengthEstimate
	set.Sampling = fmt.Sprintf("synthetic shared prefixes: %d prompts, %d prefixes of %d tokens, suffixes of %d, outputs of %d, seed %d",
		n, spec.Prefixes, spec.PrefixLen, spec.SuffixLen, spec.OutputLen, opt.Seed)
	set.refit = func(ratio float64) (*RequestSet, error) {
		words := spec
		words.PrefixLen, words.SuffixLen = wordsFor(spec.PrefixLen, ratio), wordsFor(spec.SuffixLen, ratio)
		out, err := SharedPrefix(words, opt)
		if err != nil {
			return nil, err
		}
		out.Source, out.Sampling, out.refit = set.Source, set.Sampling, nil
		return out, nil
	}
	return set, nil
}

// wordsFor is the word count of tokens tokens at ratio tokens per word
// (0 stays 0, anything else at least 1 word).
func wordsFor(tokens int, ratio float64) int {
	if tokens == 0 {
		return 0
	}
	return max(1, int(math.Round(float64(tokens)/ratio)))
}

// MeanPromptWords is the mean length of the set's prompts in words (what
// a generated set's lengths are before they are fitted); 0 for no prompts.
func (s *RequestSet) MeanPromptWords() int {
	if len(s.Prompts) == 0 {
		return 0
	}
	words := 0
	for i := range s.Prompts {
		words += len(strings.Fields(s.Prompts[i].CompletionText()))
	}
	return words / len(s.Prompts)
}

// CanFitRatio reports whether FitRatio applies to the set (shared
// prefixes, a trace).
func (s *RequestSet) CanFitRatio() bool { return s.refit != nil }

// FitRatio puts a generated set's lengths in the served model's tokens,
// keeping what the prompts share: it counts the tokens of the first
// prompt and regenerates the set with every length (prefix, suffix, a
// trace row's input, a Mooncake block) divided by that prompt's tokens per
// word, so that shared prefixes stay shared. It is one ratio for the set,
// not a count per prompt as FitRandom does. method is recorded as
// LengthMethod.
func FitRatio(ctx context.Context, set *RequestSet, count TokenCounter, method string) (*RequestSet, error) {
	if set.refit == nil || len(set.Prompts) == 0 {
		return nil, fmt.Errorf("fit prompt lengths: %s is not a generated set", set.Source)
	}
	p := set.Prompts[0]
	words := len(strings.Fields(p.Prompt))
	if words == 0 {
		return nil, fmt.Errorf("fit prompt lengths: %s: empty first prompt", set.Source)
	}
	c, err := count(ctx, p.Prompt)
	if err != nil {
		return nil, fmt.Errorf("fit prompt lengths: %w", err)
	}
	if c <= 0 {
		return nil, fmt.Errorf("fit prompt lengths: the server counted %d tokens for %d words", c, words)
	}
	out, err := set.refit(float64(c) / float64(words))
	if err != nil {
		return nil, err
	}
	out.LengthMethod = method
	return out, nil
}
