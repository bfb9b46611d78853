// Package tokenize asks an inference server to count the tokens of a text
// with the served model's tokenizer:
//
//	llama.cpp  POST /tokenize {"content": TEXT, "add_special": true}
//	           → {"tokens": [ids...]}
//	vLLM       POST /tokenize {"model": M, "prompt": TEXT}
//	           → {"count": N, "max_model_len": L, "tokens": [ids...]}
//	SGLang     POST /tokenize {"model": M, "prompt": TEXT}
//	           → {"tokens": [ids...], "count": N, "max_model_len": L}
//
// Special tokens are added the way a prompt gets them (llama.cpp's
// add_special, vLLM's and SGLang's add_special_tokens default true), so a
// count is what the server counts for that text sent as a completions
// prompt.
package tokenize

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/joulebench/joulebench/engines/process"
)

// LlamaCpp counts text's tokens with llama-server's /tokenize.
func LlamaCpp(ctx context.Context, hc *http.Client, base, text string) (int, error) {
	var out struct {
		Tokens []any `json:"tokens"`
	}
	body := map[string]any{"content": text, "add_special": true}
	if _, err := process.DoJSON(ctx, hc, http.MethodPost, strings.TrimSuffix(base, "/")+"/tokenize", body, &out); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if out.Tokens == nil {
		return 0, fmt.Errorf("tokenize: POST %s/tokenize: the answer has no tokens", base)
	}
	return len(out.Tokens), nil
}

// OpenAIServer counts text's tokens with vLLM's or SGLang's /tokenize,
// for model (the served name).
func OpenAIServer(ctx context.Context, hc *http.Client, base, model, text string) (int, error) {
	var out struct {
		Count  *int  `json:"count"`
		Tokens []any `json:"tokens"`
	}
	body := map[string]any{"model": model, "prompt": text}
	if _, err := process.DoJSON(ctx, hc, http.MethodPost, strings.TrimSuffix(base, "/")+"/tokenize", body, &out); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	switch {
	case out.Count != nil:
		return *out.Count, nil
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, fmt.Errorf("tokenize: POST %s/tokenize: the answer has neither count nor tokens", base)
}
