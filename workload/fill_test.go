package workload

import (
	"strings"
	"testing"
)

func TestCapContextTokens(t *testing.T) {
	tests := []struct {
		tokens, ctx, maxTokens, want int
	}{
		{4096, 0, 256, 4096},      // unknown context: no cap
		{4096, 8192, 256, 4096},   // fits
		{8192, 8192, 256, 7920},   // 8192 − 256 − 16
		{65536, 32768, 64, 32688}, // 32768 − 64 − 16
		{100, 10, 64, 1},          // no room at all: at least 1
	}
	for _, tt := range tests {
		if got := CapContextTokens(tt.tokens, tt.ctx, tt.maxTokens); got != tt.want {
			t.Errorf("CapContextTokens(%d, %d, %d) = %d, want %d", tt.tokens, tt.ctx, tt.maxTokens, got, tt.want)
		}
	}
}

func TestFillText(t *testing.T) {
	for _, tokens := range []int{100, 4096} {
		s := FillText(tokens, 0)
		// tokens × 3 characters exactly, so the estimate is tokens.
		if len(s) != tokens*FillCharsPerToken || EstimateTokens(s) != tokens {
			t.Errorf("FillText(%d): %d chars, estimate %d", tokens, len(s), EstimateTokens(s))
		}
		if !strings.HasPrefix(s, fillInstruction) {
			t.Errorf("FillText(%d) lacks the instruction", tokens)
		}
		// A whitespace tokenizer's count (words) stays under the estimate:
		// BPE tokenizers give about one token per such word.
		if w := len(strings.Fields(s)); w > tokens {
			t.Errorf("FillText(%d): %d words, more than the tokens asked for", tokens, w)
		}
	}
	if FillText(500, 0) == FillText(500, 1) {
		t.Error("two prompts of the same size are equal (a prefix cache could serve one from the other)")
	}
}

func TestFillContext(t *testing.T) {
	set, err := LoadBuiltin("chat", Options{Count: 2, MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	a, err := FillContext(set, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := FillContext(set, 2000)
	if len(a.Prompts) != 2 || a.Prompts[0].ID != set.Prompts[0].ID || a.Prompts[0].MaxTokens != 64 {
		t.Fatalf("prompts %+v", a.Prompts)
	}
	if EstimateTokens(a.Prompts[1].Prompt) != 1000 || EstimateTokens(b.Prompts[1].Prompt) != 2000 {
		t.Errorf("estimates %d, %d", EstimateTokens(a.Prompts[1].Prompt), EstimateTokens(b.Prompts[1].Prompt))
	}
	if a.SHA256 == set.SHA256 || a.SHA256 == b.SHA256 || !strings.Contains(a.Source, "filled to 1000 tokens") {
		t.Errorf("hash or source not of the filled set: %s %s", a.SHA256, a.Source)
	}
	if set.Prompts[0].Prompt == a.Prompts[0].Prompt || set.Prompts[0].Messages == nil && set.Prompts[0].Prompt == "" {
		t.Error("the original set was changed or not replaced")
	}
	if _, err := FillContext(set, 0); err == nil {
		t.Error("0 tokens accepted")
	}
	// A filled set's lengths are estimated, even from a set fitted in the
	// served model's tokens.
	fitted := *set
	fitted.LengthMethod = LengthTokenize
	if f, _ := FillContext(&fitted, 1000); f.LengthMethod != LengthEstimate {
		t.Errorf("filled set's length method %q", f.LengthMethod)
	}
}
