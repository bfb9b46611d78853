package main

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/joulebench/joulebench/workload"
)

// Random prompts against the real llama-server are the length asked in
// the served model's tokens: the tiny model's vocabulary splits the
// random words into about three pieces each, so prompts generated as
// "a word a token" were served at 2.5–3× the length asked (200 → mean
// 570). Each prompt is now cut with llama-server's own /tokenize, run.json
// says so (length_method tokenize), and the server's own prompt_tokens of
// every formal request is the length asked plus the chat template's
// tokens: within templateTokens + 5 % of it.
func TestLlamaRandomPromptLengths(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	model := tinyModel(t, dir)
	const asked = 200
	// The ChatML template wraps a prompt in <|im_start|>user\n … <|im_end|>\n
	// <|im_start|>assistant\n: two special tokens, the pieces of "user",
	// "assistant" and three newlines, and the BOS the server adds: well
	// under 24 tokens in the tiny vocabulary.
	const templateTokens = 24
	out := filepath.Join(dir, "run")
	_, errOut, code := runCLI(t, llamaArgs(t, out, bin, model, "--dataset", "random", "--random-input-len", strconv.Itoa(asked),
		"--random-output-len", "8", "--set", "request_count=6")...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	run := loadRun(t, out)
	if m := run.Meta.RequestSet.LengthMethod; m != workload.LengthTokenize {
		t.Errorf("length_method %q, want %q", m, workload.LengthTokenize)
	}
	n := 0
	sum := 0.0
	for _, r := range run.Requests {
		if r.Phase != "formal" || !r.OK {
			continue
		}
		n++
		sum += float64(r.PromptTokens)
		if d := float64(r.PromptTokens - asked); d < 0 || d > templateTokens+0.05*asked {
			t.Errorf("request %s: the server counted %d prompt tokens, asked %d (+ at most %d of template)", r.ID, r.PromptTokens, asked, templateTokens)
		}
	}
	if n != 6 {
		t.Fatalf("%d successful formal requests, want 6", n)
	}
	t.Logf("prompt tokens served: mean %.1f for %d asked", sum/float64(n), asked)
	if run.Results == nil {
		t.Fatal("no results")
	}
	if m := run.Results.Values["mean_prompt_tokens"]; m.Value == nil || math.Abs(toFloat(m.Value)-sum/float64(n)) > 1e-9 {
		t.Errorf("mean_prompt_tokens %+v, want %.3f", m, sum/float64(n))
	}
}

// toFloat reads a result's value (a JSON number) as a float64 (NaN when it
// is not a number).
func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return math.NaN()
}
