package workload

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// Counters standing for tokenizers of different grain: each counts a
// text's words (strings.Fields) in its own way.
func wordCounter(perWord func(w string) int, extra int) TokenCounter {
	return func(_ context.Context, text string) (int, error) {
		n := extra
		for _, w := range strings.Fields(text) {
			n += perWord(w)
		}
		return n, nil
	}
}

// Random prompts fitted by a counter measure their drawn length in that
// counter's tokens, to within the tokens of one word (a prompt is cut at
// word boundaries), whatever the tokens per word: one (GPT-2 style for
// these words), three and a BOS (the tiny test model's pieces), a word's
// letters over two rounded up (varies by word), characters over four (the
// simulator's count).
func TestFitRandomLengths(t *testing.T) {
	spec := RandomSpec{InputLen: 200, OutputLen: 16, RangeRatio: 0.5}
	for _, tc := range []struct {
		name     string
		count    TokenCounter
		maxGrain int // the most tokens one word adds
	}{
		{"one per word", wordCounter(func(string) int { return 1 }, 0), 1},
		{"three per word and a BOS", wordCounter(func(string) int { return 3 }, 1), 3},
		{"letters over two", wordCounter(func(w string) int { return (len(w) + 1) / 2 }, 1), 4},
		{"characters over four", func(_ context.Context, text string) (int, error) { return (len(text) + 3) / 4, nil }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Random(spec, Options{Count: 50, Seed: 7, MemoryAvailable: -1})
			if err != nil {
				t.Fatal(err)
			}
			if set.LengthMethod != LengthEstimate {
				t.Fatalf("generated set's method %q", set.LengthMethod)
			}
			fitted, err := FitRandom(context.Background(), set, tc.count, LengthTokenize)
			if err != nil {
				t.Fatal(err)
			}
			if fitted.LengthMethod != LengthTokenize || fitted.SHA256 == set.SHA256 || len(fitted.Prompts) != len(set.Prompts) {
				t.Fatalf("method %q, sha changed %v, %d prompts", fitted.LengthMethod, fitted.SHA256 != set.SHA256, len(fitted.Prompts))
			}
			for i, p := range fitted.Prompts {
				want := len(strings.Fields(set.Prompts[i].Prompt)) // the drawn length
				got, _ := tc.count(context.Background(), p.Prompt)
				if d := got - want; d > tc.maxGrain || -d > tc.maxGrain {
					t.Errorf("prompt %s: %d tokens, drawn %d", p.ID, got, want)
				}
				if p.ID != set.Prompts[i].ID || p.MaxTokens != set.Prompts[i].MaxTokens {
					t.Errorf("prompt %d: id or max_tokens changed", i)
				}
				if want < 100 || want > 300 {
					t.Errorf("prompt %s: drawn %d outside 200·[0.5, 1.5]", p.ID, want)
				}
			}
		})
	}
}

// By hand: three tokens a word and a BOS make 3w+1; a drawn length of 10
// words is met exactly by 3 words (3·3+1 = 10); the text is the prompt's
// first three words.
func TestFitOneByHand(t *testing.T) {
	words := strings.Fields("a b c d e f g h i j")
	text, got, ratio, err := fitOne(context.Background(), words, 10, 0, wordCounter(func(string) int { return 3 }, 1))
	if err != nil || text != "a b c" || got != 10 {
		t.Fatalf("fitOne = %q, %d, %v", text, got, err)
	}
	// The last count was of 3 words: 10/3 tokens a word.
	if ratio != 10.0/3 {
		t.Errorf("ratio %v, want 10/3", ratio)
	}
	// A drawn length above the words there are reuses them in order:
	// 1 token a word, 12 tokens → 12 words.
	text, got, _, err = fitOne(context.Background(), words, 12, 0, wordCounter(func(string) int { return 1 }, 0))
	if err != nil || text != "a b c d e f g h i j a b" || got != 12 {
		t.Errorf("fitOne = %q, %d, %v", text, got, err)
	}
}

// The calibrated count by hand: 10 words counted 35 tokens and 20 words
// 65, so b = (65−35)/(20−10) = 3 tokens a word and a = 35 − 3·10 = 5 (the
// chat template); 7 words count 5 + 21 = 26.
func TestLinearCounter(t *testing.T) {
	c, err := LinearCounter(10, 35, 20, 65)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c(context.Background(), "a b c d e f g"); n != 26 {
		t.Errorf("7 words: %d tokens, want 26", n)
	}
	if _, err := LinearCounter(10, 35, 20, 35); err == nil {
		t.Error("a count that does not grow was accepted")
	}
}

// A failing counter fails the fit, naming the prompt; a set that is not
// the random one is refused.
func TestFitRandomErrors(t *testing.T) {
	set, err := Random(RandomSpec{InputLen: 20, OutputLen: 4}, Options{Count: 2, MemoryAvailable: -1})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("connection refused")
	_, err = FitRandom(context.Background(), set, func(context.Context, string) (int, error) { return 0, boom }, LengthTokenize)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "prompt random-1 to 20 tokens") {
		t.Errorf("error %v", err)
	}
	// A count failing for a later prompt (fitted concurrently) fails the
	// fit too.
	many, err := Random(RandomSpec{InputLen: 20, OutputLen: 4}, Options{Count: 40, MemoryAvailable: -1})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	_, err = FitRandom(context.Background(), many, func(_ context.Context, text string) (int, error) {
		if calls.Add(1) > 10 {
			return 0, boom
		}
		return len(strings.Fields(text)), nil
	}, LengthTokenize)
	if !errors.Is(err, boom) {
		t.Errorf("a later prompt's failure: %v", err)
	}
	chat, err := LoadBuiltin("chat", Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FitRandom(context.Background(), chat, wordCounter(func(string) int { return 1 }, 0), LengthTokenize); err == nil {
		t.Error("a dataset that is not random was fitted")
	}
}
