package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// Length methods of a random set: how its prompts' lengths were made to be
// in the served model's tokens (run.json request_set.length_method).
const (
	// LengthTokenize: each prompt was cut to its drawn length counted by
	// the served model's own tokenizer (the server's /tokenize endpoint),
	// as vLLM's random dataset counts with the model's tokenizer. The
	// count is of the prompt text; a chat request adds its template's
	// tokens on top.
	LengthTokenize = "tokenize"
	// LengthCalibrated: the server has no tokenize endpoint; two probe
	// requests measured its own prompt_tokens for two word counts, and
	// each prompt's word count was set from that line (template included).
	LengthCalibrated = "calibrated"
	// LengthEstimate: one word taken for one token, not checked against
	// the model (the set as generated, before a server was there).
	LengthEstimate = "estimate"
)

// TokenCounter counts the tokens of a prompt text in the served model.
type TokenCounter func(ctx context.Context, text string) (int, error)

// maxFitSteps bounds the counts asked per prompt.
const maxFitSteps = 8

// FitRandom returns the random set with each prompt's word count chosen
// so that count gives its drawn input length (the number of words it was
// generated with), or the nearest count reached in maxFitSteps tries; a
// prompt longer than the drawn length reuses its words in order. The ids,
// max_tokens and order are kept; the sha256 is of the new prompts, and
// LengthMethod says which method (LengthTokenize, LengthCalibrated).
func FitRandom(ctx context.Context, set *RequestSet, count TokenCounter, method string) (*RequestSet, error) {
	if _, err := ParseRandomSpec(set.Source); err != nil {
		return nil, fmt.Errorf("fit prompt lengths: %w", err)
	}
	out := *set
	out.Prompts = make([]Prompt, len(set.Prompts))
	devs := make([]int, len(set.Prompts))
	fit := func(i int, ratio float64) (float64, error) {
		p := set.Prompts[i]
		words := strings.Fields(p.Prompt)
		target := len(words)
		if target == 0 {
			out.Prompts[i] = p
			return ratio, nil
		}
		text, got, r, err := fitOne(ctx, words, target, ratio, count)
		if err != nil {
			return 0, fmt.Errorf("fit prompt %s to %d tokens: %w", p.ID, target, err)
		}
		p.Prompt = text
		out.Prompts[i] = p
		devs[i] = abs(got - target)
		return r, nil
	}
	if len(set.Prompts) > 0 {
		// The first prompt measures the tokens per word every other
		// prompt starts from; the others are fitted fitWorkers at a time
		// (each from that ratio, so the result does not depend on the
		// order the counts come back in).
		ratio, err := fit(0, 0)
		if err != nil {
			return nil, err
		}
		if err := parallel(ctx, len(set.Prompts)-1, func(i int) error { _, err := fit(i+1, ratio); return err }); err != nil {
			return nil, err
		}
	}
	out.LengthMethod = method
	how := fmt.Sprintf("each prompt within %d tokens of its drawn length", slices.Max(append(devs, 0)))
	if method == LengthCalibrated {
		how = "from a line fitted to the server's prompt_tokens of two probe requests, template included"
	}
	out.Sampling = fmt.Sprintf("%s; lengths in the served model's tokens (%s: %s)", set.Sampling, method, how)
	out.SHA256 = out.canonicalSum("")
	return &out, nil
}

// fitWorkers is how many prompts are fitted at once (each asks the
// server for a few counts in turn).
const fitWorkers = 8

// parallel calls f(0..n-1) on fitWorkers goroutines and returns the first
// error (the others stop taking work once one failed or ctx ended).
func parallel(ctx context.Context, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(fitWorkers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// fitOne searches the word count whose text counts target tokens, from a
// guess by ratio (tokens per word; 0: unknown, counts the drawn words
// first). It returns the best text, its count and the ratio it measured.
func fitOne(ctx context.Context, words []string, target int, ratio float64, count TokenCounter) (string, int, float64, error) {
	text := func(n int) string {
		var b strings.Builder
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[j%len(words)])
		}
		return b.String()
	}
	n := target
	if ratio > 0 {
		n = max(1, int(math.Round(float64(target)/ratio)))
	}
	best, bestN := -1, 0
	tried := map[int]bool{}
	for step := 0; step < maxFitSteps && !tried[n]; step++ {
		tried[n] = true
		c, err := count(ctx, text(n))
		if err != nil {
			return "", 0, ratio, err
		}
		if c <= 0 {
			return "", 0, ratio, fmt.Errorf("the server counted %d tokens for %d words", c, n)
		}
		ratio = float64(c) / float64(n)
		if best < 0 || abs(c-target) < abs(best-target) {
			best, bestN = c, n
		}
		if c == target {
			break
		}
		d := int(math.Round(float64(target-c) / ratio))
		if d == 0 {
			d = 1
			if c > target {
				d = -1
			}
		}
		n = max(1, n+d)
	}
	return text(bestN), best, ratio, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// LinearCounter is the token count of a calibrated server: a text of w
// words counts round(a + b·w) tokens, from two probes of w1 < w2 words
// that counted c1 and c2 (b = (c2−c1)/(w2−w1), a = c1 − b·w1).
func LinearCounter(w1, c1, w2, c2 int) (TokenCounter, error) {
	if w2 <= w1 || c2 <= c1 {
		return nil, fmt.Errorf("calibration: %d words counted %d tokens and %d words %d: the count must grow with the words", w1, c1, w2, c2)
	}
	b := float64(c2-c1) / float64(w2-w1)
	a := float64(c1) - b*float64(w1)
	return func(_ context.Context, text string) (int, error) {
		return int(math.Round(a + b*float64(len(strings.Fields(text))))), nil
	}, nil
}
