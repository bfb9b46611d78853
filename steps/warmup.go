package steps

import (
	"fmt"

	"github.com/joulebench/joulebench/workflow"
)

// WarmupConfig is the `with:` of a warmup step: informal requests whose
// energy counts in startup, never in formal metrics.
type WarmupConfig struct {
	Requests int `yaml:"requests"`
	// Prompt, when set, replaces the request set's prompts (asiai: "Hello").
	Prompt string `yaml:"prompt"`
	// MaxTokens, when > 0, overrides the request set's max_tokens.
	MaxTokens   int `yaml:"max_tokens"`
	Concurrency int `yaml:"concurrency"`
	// Temperature, when set, is sent with every warm-up request.
	Temperature *float64 `yaml:"temperature"`
}

// Validate checks counts.
func (c *WarmupConfig) Validate() error {
	if c.Requests < 0 || c.MaxTokens < 0 || c.Concurrency < 0 {
		return fmt.Errorf("requests, max_tokens and concurrency must not be negative")
	}
	return nil
}

var warmupKind = workflow.StepKind{
	Name:      "warmup",
	Doc:       "send informal requests (stage warmup, inside startup)",
	NewConfig: func() any { return &WarmupConfig{Requests: 8, Concurrency: 8} },
}
