package steps

import (
	"context"
	"strconv"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// context_tokens replaces the prompts by generated ones of that size,
// capped by the model's context length less the output, and records both.
func TestRequestsContextTokens(t *testing.T) {
	tests := []struct {
		name       string
		contextLen int
		asked      int
		want       int
	}{
		{"fits", 0, 600, 600},
		// 1024 − max_tokens 64 − 16 = 944.
		{"capped by the model's context", 1024, 4096, 944},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRC(t)
			if err := rc.Out.UpdateMeta(func(m *record.Meta) { m.Engine.ContextLength = tt.contextLen }); err != nil {
				t.Fatal(err)
			}
			cl := &testClient{clock: rc.Clock.Now, tokens: 5}
			d := &Deps{Engine: newTestEngine("http://x"), Client: cl, Model: "m", Chat: true}
			cfg := formalConfig()
			cfg.MaxTokens, cfg.ContextTokens = 64, tt.asked
			if err := runRequests(context.Background(), rc, d, cfg); err != nil {
				t.Fatal(err)
			}
			sent := cl.sent()
			if len(sent) != 3 {
				t.Fatalf("sent %d requests, want 3", len(sent))
			}
			for _, r := range sent {
				text := r.Prompt
				if len(r.Messages) > 0 {
					text = r.Messages[0].Content
				}
				if got := workload.EstimateTokens(text); got != tt.want {
					t.Errorf("request %s: about %d tokens, want %d", r.ID, got, tt.want)
				}
			}
			l := reload(t, rc).Meta.Labels
			if l["context_tokens"] != itoa(tt.asked) || l["context_tokens_filled"] != itoa(tt.want) {
				t.Errorf("labels %v", l)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
