package observe

import (
	"context"
	"strings"
	"testing"
)

// Each engine's counter is found on a /metrics in its exposition (the
// series as the engines' docs show them) and read as the sum of its
// series; TGI's is the _sum of its histogram of tokens per request.
func TestResolveCounter(t *testing.T) {
	for _, tc := range []struct {
		name, body, kind, want string
		tokens                 float64
	}{
		{"vllm, two models", "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"a\"} 10\nvllm:generation_tokens_total{model_name=\"b\"} 5\n", "", "vllm:generation_tokens_total", 15},
		{"sglang", "# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total{model_name=\"m\"} 7.557572e+06\n", "sglang", "sglang:generation_tokens_total", 7557572},
		{"llama.cpp", "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 3469\n", "llamacpp", "llamacpp:tokens_predicted_total", 3469},
		{"tgi histogram", "# TYPE tgi_request_generated_tokens histogram\ntgi_request_generated_tokens_bucket{le=\"+Inf\"} 3\ntgi_request_generated_tokens_sum 120\ntgi_request_generated_tokens_count 3\n", "", "tgi_request_generated_tokens_sum", 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := newMetricsServer(t, tc.body) + "/metrics"
			c, err := ResolveCounter(context.Background(), url, tc.kind, "")
			if err != nil || c.Name() != tc.want {
				t.Fatalf("counter %+v, %v; want %s", c, err, tc.want)
			}
			got, err := ReadTokens(context.Background(), url, c)
			if err != nil || got != tc.tokens {
				t.Errorf("tokens %v, %v; want %v", got, err, tc.tokens)
			}
		})
	}
	// Two known counters: which one is for the user to say.
	url := newMetricsServer(t, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 1\n# TYPE sim:generation_tokens_total counter\nsim:generation_tokens_total 2\n") + "/metrics"
	if _, err := ResolveCounter(context.Background(), url, "", ""); err == nil || !strings.Contains(err.Error(), "several token counters") {
		t.Errorf("two counters: %v", err)
	}
	// --token-metric names any series.
	if c, err := ResolveCounter(context.Background(), url, "", "sim:generation_tokens_total"); err != nil || c.Name() != "sim:generation_tokens_total" {
		t.Errorf("--token-metric: %+v %v", c, err)
	}
	if _, err := ResolveCounter(context.Background(), url, "", "nope_total"); err == nil || !strings.Contains(err.Error(), "no series of that name") {
		t.Errorf("--token-metric absent: %v", err)
	}
}
