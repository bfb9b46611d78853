package sim

import (
	"context"

	"github.com/joulebench/joulebench/engines"
)

var _ engines.Tokenizer = (*Engine)(nil)

// CountTokens counts text as the simulated server counts a prompt (its
// characters / 4, at least 1).
func (e *Engine) CountTokens(_ context.Context, text string) (int, error) {
	return promptTokens(len(text)), nil
}
