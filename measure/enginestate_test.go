package measure

import (
	"math"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// NewEngineSeries by hand: two engines' running gauges at t = 1 add up
// (3 + 4 = 7); two names for one KV cache at t = 1 (vLLM's old and new)
// give the fuller one, 0.6, not 1.1; an unknown name and a NaN are left
// out. Window [1, 2] holds the scrapes at 1 and 2: running (7 + 1) / 2 = 4,
// KV (0.6 + 0.2) / 2 = 0.4, largest 0.6; no waiting gauge.
func TestEngineSeriesHand(t *testing.T) {
	ms := []record.EngineMetric{
		{T: 2, Name: "sglang:num_running_reqs", Value: 1},
		{T: 1, Name: "sglang:num_running_reqs", Labels: map[string]string{"dp": "0"}, Value: 3},
		{T: 1, Name: "sglang:num_running_reqs", Labels: map[string]string{"dp": "1"}, Value: 4},
		{T: 3, Name: "sglang:num_running_reqs", Value: 100},
		{T: 1, Name: "vllm:kv_cache_usage_perc", Value: 0.6},
		{T: 1, Name: "vllm:gpu_cache_usage_perc", Value: 0.5},
		{T: 2, Name: "vllm:kv_cache_usage_perc", Value: 0.2},
		{T: 2, Name: "vllm:num_preemptions_total", Value: 9},
		{T: 2, Name: "vllm:num_requests_waiting", Value: math.NaN()},
	}
	s := NewEngineSeries(ms)
	if len(s.Running) != 3 || s.Running[0] != (TV{1, 7}) || s.Running[1] != (TV{2, 1}) {
		t.Errorf("running = %v, want [{1 7} {2 1} {3 100}]", s.Running)
	}
	if len(s.KV) != 2 || s.KV[0] != (TV{1, 0.6}) {
		t.Errorf("kv = %v, want [{1 0.6} {2 0.2}]", s.KV)
	}
	w := s.Window(1, 2)
	if w.Scrapes != 2 || w.RunningMean != 4 || math.Abs(w.KVMean-0.4) > 1e-12 || w.KVMax != 0.6 || w.HasWaiting || !w.HasKV {
		t.Errorf("window = %+v, want 2 scrapes, running 4, KV mean 0.4 max 0.6, no waiting", w)
	}
	if w := s.Window(10, 20); w.HasRunning || w.HasKV || w.Scrapes != 0 || w.KVMax != 0 {
		t.Errorf("empty window = %+v", w)
	}
}

// EngineStateKind knows each engine's three gauges and nothing else.
func TestEngineStateKind(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"vllm:num_requests_running", EngineRunning}, {"sglang:num_running_reqs", EngineRunning},
		{"llamacpp:requests_processing", EngineRunning}, {"sim:num_requests_running", EngineRunning},
		{"vllm:num_requests_waiting", EngineWaiting}, {"sglang:num_queue_reqs", EngineWaiting},
		{"llamacpp:requests_deferred", EngineWaiting}, {"sim:num_requests_waiting", EngineWaiting},
		{"vllm:kv_cache_usage_perc", EngineKV}, {"vllm:gpu_cache_usage_perc", EngineKV}, {"sglang:token_usage", EngineKV},
		{"llamacpp:kv_cache_usage_ratio", EngineKV}, {"sim:kv_cache_usage_perc", EngineKV},
		{"vllm:num_requests_running_total", ""}, {"num_requests_running", ""},
	} {
		if got := EngineStateKind(c.name); got != c.want {
			t.Errorf("EngineStateKind(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// BatchLimit reads engine.extra.slots first, then the command line (the
// last option given, in either form), then sim:num_slots; a bad value is
// skipped; nothing known gives 0.
func TestBatchLimit(t *testing.T) {
	slots := []record.EngineMetric{{T: 1, Name: "sim:num_slots", Value: 8}}
	for _, c := range []struct {
		name    string
		extra   map[string]any
		command []string
		ms      []record.EngineMetric
		want    float64
		source  string
	}{
		{"extra slots wins", map[string]any{"slots": 4}, []string{"llama-server", "-np", "9"}, slots, 4, "run.json engine.extra.slots"},
		{"vllm", nil, []string{"vllm", "serve", "m", "--max-num-seqs", "64"}, nil, 64, "engine command --max-num-seqs"},
		{"sglang =", nil, []string{"python", "--max-running-requests=32"}, nil, 32, "engine command --max-running-requests"},
		{"last wins", nil, []string{"llama-server", "--parallel", "2", "-np", "3"}, nil, 3, "engine command -np"},
		{"bad value skipped", map[string]any{"slots": 0}, []string{"vllm", "--max-num-seqs", "x"}, slots, 8, "/metrics sim:num_slots"},
		{"flag at the end", nil, []string{"vllm", "--max-num-seqs"}, nil, 0, ""},
		{"unknown", nil, []string{"vllm", "serve", "m"}, nil, 0, ""},
	} {
		m := record.Meta{Engine: record.EngineInfo{Extra: c.extra, Command: c.command}}
		got, src := BatchLimit(m, c.ms)
		if got != c.want || src != c.source {
			t.Errorf("%s: BatchLimit = %v %q, want %v %q", c.name, got, src, c.want, c.source)
		}
	}
}

// TokensIn by hand: a request generating 11 tokens uniformly over
// [0, 10] has 5.5 in [0, 5]; one with chunks at 0.5 (its first token),
// 1, 2 and 3 (one token each), each token generated over the gap before
// it (the first two over [0.5, 1]), has in [1.5, 3] half of the token
// generated over [1, 2] and all of the one over [2, 3]: 1.5; a failed one
// counts 0. Over the whole span the sum is every output token.
func TestTokensIn(t *testing.T) {
	a := &record.Request{ID: "a", OK: true, FirstTokenAt: 0, DoneAt: 10, OutputTokens: 11}
	b := &record.Request{ID: "b", OK: true, SentAt: 0, FirstTokenAt: 0.5, DoneAt: 3, OutputTokens: 4, TokenTimes: []float64{0.5, 1, 2, 3}}
	f := &record.Request{ID: "f", OK: false, FirstTokenAt: 0, DoneAt: 10, OutputTokens: 0}
	s := &Shapes{}
	for _, c := range []struct {
		reqs []*record.Request
		a, b float64
		want float64
	}{
		{[]*record.Request{a}, 0, 5, 5.5},
		{[]*record.Request{b}, 1.5, 3, 1.5},
		{[]*record.Request{a, b, f}, -1, 11, 15},
	} {
		got, err := s.TokensIn(c.reqs, c.a, c.b)
		if err != nil || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TokensIn([%d requests], %v, %v) = %v, %v; want %v", len(c.reqs), c.a, c.b, got, err, c.want)
		}
	}
	if _, err := s.TokensIn([]*record.Request{a}, 5, 1); err == nil {
		t.Errorf("TokensIn over [5, 1]: no error")
	}
}
