package steps

import (
	"fmt"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// fillContext replaces the set's prompts by prompts generated to fill
// c.ContextTokens tokens of context, capped by the model's context length
// (run.json's engine.context_length, from the engine's identity) less the
// output; the requested and the filled size are recorded as the labels
// context_tokens and context_tokens_filled.
func fillContext(rc *workflow.RunContext, set *workload.RequestSet, c *RequestsConfig) (*workload.RequestSet, error) {
	maxTokens := c.MaxTokens
	for _, p := range set.Prompts {
		maxTokens = max(maxTokens, p.MaxTokens)
	}
	n := workload.CapContextTokens(c.ContextTokens, rc.Out.Meta().Engine.ContextLength, maxTokens)
	if n < c.ContextTokens {
		rc.Log.Warn().Int("context_tokens", c.ContextTokens).Int("filled", n).Msg("context size capped by the model's context length")
	}
	filled, err := workload.FillContext(set, n)
	if err != nil {
		return nil, fmt.Errorf("context_tokens: %w", err)
	}
	err = rc.Out.UpdateMeta(func(m *record.Meta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["context_tokens"] = strconv.Itoa(c.ContextTokens)
		m.Labels["context_tokens_filled"] = strconv.Itoa(n)
	})
	return filled, err
}
