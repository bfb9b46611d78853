package workload

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// RandomName is the dataset name of the synthetic set (see RandomSpec).
const RandomName = "random"

// Defaults of the synthetic set, as in vLLM's benchmark (--random-input-len
// 1024, --random-output-len 128, --random-range-ratio 0).
const (
	DefaultRandomInputLen  = 1024
	DefaultRandomOutputLen = 128
	// DefaultRandomCount is how many prompts a random set has when the
	// options ask for all of them (Count 0).
	DefaultRandomCount = 1000
)

// RandomSpec describes the synthetic set: each prompt's input length is
// drawn uniformly from [InputLen·(1−RangeRatio), InputLen·(1+RangeRatio)]
// and its output length (its max_tokens) from the same range around
// OutputLen, both rounded down and at least 1, from a PCG stream seeded
// with Options.Seed. The prompt is that many words drawn from a fixed list
// of common English words, each about one token for the usual BPE
// tokenizers; without a tokenizer the engine's prompt_tokens is the count
// that holds. With ignore_eos the engine generates exactly max_tokens, as
// vLLM's random dataset is meant to be run.
type RandomSpec struct {
	InputLen   int
	OutputLen  int
	RangeRatio float64
}

// String is the dataset name that ParseRandomSpec reads back:
// random:input_len=I,output_len=O,range_ratio=R.
func (s RandomSpec) String() string {
	return fmt.Sprintf("%s:input_len=%d,output_len=%d,range_ratio=%s", RandomName, s.InputLen, s.OutputLen,
		strconv.FormatFloat(s.RangeRatio, 'g', -1, 64))
}

// IsRandom reports whether a dataset name names the synthetic set.
func IsRandom(name string) bool {
	return name == RandomName || strings.HasPrefix(name, RandomName+":")
}

// ParseRandomSpec reads "random" or "random:key=value,...", keys input_len,
// output_len and range_ratio; an absent key keeps its default.
func ParseRandomSpec(name string) (RandomSpec, error) {
	s := RandomSpec{InputLen: DefaultRandomInputLen, OutputLen: DefaultRandomOutputLen}
	if !IsRandom(name) {
		return s, fmt.Errorf("dataset %q is not the random set", name)
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(name, RandomName), ":")
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return s, fmt.Errorf("random dataset: %q is not key=value", kv)
			}
			var err error
			switch strings.TrimSpace(k) {
			case "input_len":
				s.InputLen, err = strconv.Atoi(strings.TrimSpace(v))
			case "output_len":
				s.OutputLen, err = strconv.Atoi(strings.TrimSpace(v))
			case "range_ratio":
				s.RangeRatio, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
			default:
				return s, fmt.Errorf("random dataset: unknown key %q (valid: input_len, output_len, range_ratio)", k)
			}
			if err != nil {
				return s, fmt.Errorf("random dataset: %s: %w", k, err)
			}
		}
	}
	return s, s.validate()
}

func (s RandomSpec) validate() error {
	switch {
	case s.InputLen < 1 || s.OutputLen < 1:
		return fmt.Errorf("random dataset: input_len and output_len must be ≥ 1, got %d and %d", s.InputLen, s.OutputLen)
	case !(s.RangeRatio >= 0 && s.RangeRatio < 1):
		return fmt.Errorf("random dataset: range_ratio must be in [0, 1), got %v", s.RangeRatio)
	}
	return nil
}

// randomWords are common English words, each a single token for GPT-2,
// Llama and Qwen style tokenizers when preceded by a space.
var randomWords = strings.Fields(`the of and to in is was for that on with as by at from his
are be this had not but have they which one you were her all she there would their we him
been has when who will more no if out so said what up its about into than them can only
other new some could time these two may then do first any my now such like our over man
me even most made after also did many before must through back years where much your way
well down should because each just those people how too little state good very make world
still own see men work long get here between both life being under never day same another
know while last might us great old year off come since against go came right used take
three house light water small place found large part point side`)

// Random generates the synthetic set: opt.Count prompts (DefaultRandomCount
// when 0) drawn from spec with opt.Seed, then frozen like any dataset
// (opt.Shuffle and opt.Repeat have nothing to do: every prompt is new).
func Random(spec RandomSpec, opt Options) (*RequestSet, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	n := opt.Count
	if n == 0 {
		n = DefaultRandomCount
	}
	// Every generated prompt is its own text: bound the set by a prompt of
	// the mean input length before generating any.
	if err := checkMemory([]Prompt{meanRandomPrompt(spec, n)}, n, spec.String(), opt.MemoryAvailable); err != nil {
		return nil, err
	}
	src := rand.NewPCG(uint64(opt.Seed), 0x72616e646f6d) // "random"
	draw := func(k int) int {                            // uniform in [0, k)
		hi, _ := bits.Mul64(src.Uint64(), uint64(k))
		return int(hi)
	}
	length := func(mean int) int {
		lo := int(float64(mean) * (1 - spec.RangeRatio))
		hi := int(float64(mean) * (1 + spec.RangeRatio))
		lo = max(lo, 1)
		hi = max(hi, lo)
		return lo + draw(hi-lo+1)
	}
	prompts := make([]Prompt, n)
	var b strings.Builder
	for i := range prompts {
		in, out := length(spec.InputLen), length(spec.OutputLen)
		b.Reset()
		for w := 0; w < in; w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(randomWords[draw(len(randomWords))])
		}
		prompts[i] = Prompt{ID: "random-" + strconv.Itoa(i+1), Prompt: b.String(), MaxTokens: out}
	}
	opt.Format = FormatJSONL
	opt.Count = n
	opt.Shuffle, opt.Repeat = false, false
	if opt.MaxTokensCap == 0 {
		// A drawn output length is the request's length, not a reference
		// to be capped: allow every one drawn.
		opt.MaxTokensCap = max(DefaultMaxTokensCap, int(float64(spec.OutputLen)*(1+spec.RangeRatio)))
	}
	set, err := freeze(prompts, 0, spec.String(), opt)
	if err != nil {
		return nil, err
	}
	set.Options.Seed = opt.Seed       // the prompts, which are hashed, depend on it
	set.LengthMethod = LengthEstimate // until FitRandom counts them in the served model
	set.Sampling = fmt.Sprintf("synthetic: %d prompts generated with seed %d (input %d, output %d tokens, range ratio %g)",
		n, opt.Seed, spec.InputLen, spec.OutputLen, spec.RangeRatio)
	return set, nil
}

// meanRandomPrompt stands for a generated prompt of the mean input length
// (words of the mean length of randomWords, one space between them), for
// the memory bound.
func meanRandomPrompt(spec RandomSpec, n int) Prompt {
	chars := 0
	for _, w := range randomWords {
		chars += len(w) + 1
	}
	perWord := (chars + len(randomWords) - 1) / len(randomWords)
	return Prompt{ID: "random-" + strconv.Itoa(n), Prompt: strings.Repeat("x", spec.InputLen*perWord)}
}
