package profiles_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// asiaiRun builds an archived asiai run by hand: a warm-up in [1, 2], the
// formal stage [10, 20], two prompts "a" and "b" with two runs each. Every
// run is sent at s, has its first token at s + 0.125 and ends at
// s + 0.625, so that its client-clock generation time is exactly 0.5 s and
// tok/s = 2 × output tokens. Tokens 50, 55 (a) and 50, 45 (b) give tok/s
// 100, 110, 100, 90.
//
// Power: 500 W from t = 0 to t = 2 (the warm-up), 100 W from t = 3 on.
func asiaiRun() *record.Run {
	run := &record.Run{Meta: record.Meta{
		RunID:  "hand",
		Stages: []record.Stage{{Name: "warmup", Start: 1, End: 2}, {Name: "formal", Start: 10, End: 20}},
		Events: []record.Event{{Name: "engine_started", T: 0}, {Name: "engine_ready", T: 0.75}},
		Labels: map[string]string{},
	}}
	run.Requests = append(run.Requests, record.Request{ID: "warmup-00000", Phase: "warmup", PromptID: "warmup",
		SentAt: 1, FirstTokenAt: 1.5, DoneAt: 1.5, OutputTokens: 1, TokensSource: "usage", OutputChars: 5, OK: true, MaxTokens: 1})
	for i, r := range []struct {
		prompt string
		tokens int
	}{{"a", 50}, {"b", 50}, {"a", 55}, {"b", 45}} {
		s := 10 + 2*float64(i)
		run.Requests = append(run.Requests, record.Request{ID: fmt.Sprintf("%s-r%d", r.prompt, i/2+1), Phase: "formal", PromptID: r.prompt,
			SentAt: s, FirstTokenAt: s + 0.125, DoneAt: s + 0.625, PromptTokens: 20, OutputTokens: r.tokens, TokensSource: "usage",
			OutputChars: 4 * r.tokens, OK: true, MaxTokens: 64})
	}
	for t := 0; t <= 22; t++ {
		w := 100.0
		if t <= 2 {
			w = 500
		}
		// memory: 2 GB, 6 GB at t = 12 (inside the window), 9 GB at t = 21 (after it)
		mem := int64(2e9)
		switch t {
		case 12:
			mem = 6e9
		case 21:
			mem = 9e9
		}
		run.Power = append(run.Power, record.PowerSample{T: float64(t), Device: "0", PowerW: w, MemUsedBytes: mem})
	}
	return run
}

func evalAsiai(t *testing.T, run *record.Run, sets map[string]string) *record.Results {
	t.Helper()
	src, err := profiles.Read("asiai")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, "asiai.yaml", workflow.Options{Registry: steps.Registry(), Overrides: sets})
	if err != nil {
		t.Fatal(err)
	}
	res, err := workflow.Evaluate(context.Background(), l, run)
	if err != nil {
		t.Fatalf("evaluation errors (a NaN or ±Inf must never get through): %v", err)
	}
	return res
}

func num(t *testing.T, res *record.Results, name string) float64 {
	t.Helper()
	v, ok := res.Values[name]
	if !ok {
		t.Fatalf("no result %s", name)
	}
	f, ok := v.Value.(float64)
	if !ok {
		if i, isInt := v.Value.(int64); isInt {
			return float64(i)
		}
		t.Fatalf("%s = %v (%s), not a number", name, v.Value, v.Note)
	}
	return f
}

func TestAsiaiHandValues(t *testing.T) {
	res := evalAsiai(t, asiaiRun(), nil)
	sqrt200over3 := math.Sqrt(200.0 / 3)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"tok_per_sec", 100},      // median of 90, 100, 100, 110
		{"tok_per_sec_mean", 100}, // (100 + 110 + 100 + 90) / 4
		{"ttft_ms", 125},
		{"total_duration_ms", 625},
		{"tokens_generated", 50}, // (50 + 50 + 55 + 45) / 4
		{"generation_duration_ms", 500},
		// M6, edge case 3: the window is the formal stage [10, 20], where
		// every sample reads 100 W. With the warm-up in it ([1, 20]) it
		// would be (500·1 + 300·1 + 100·17) / 19 = 131.6 W.
		{"power_watts", 100},
		{"tok_per_sec_per_watt", 1}, // 100 / 100
		// M8: a: 100, 110, population variance 25; b: 100, 90, 25; √25 = 5.
		{"std_dev_tok_s", 5},
		{"cv_pct", 5}, // 5 / 100 × 100
		// sorted 90, 100, 100, 110; p90 rank 0.9 × 3 = 2.7: 100 + 0.7 × 10.
		{"tok_per_sec_p90", 107},
		{"tok_per_sec_p50", 100},
		// sample std √(200/3) = 8.165; t(0.975, 3) = 3.182; / √4.
		{"tok_per_sec_ci95", 3.182 * sqrt200over3 / 2},
		{"ttft_client_ms", 125},
		{"prefill_tok_per_sec", 160}, // 20 prompt tokens / 0.125 s
		{"model_load_ms", 750},       // engine_ready − engine_started, no Ollama load_duration
		{"warmup_requests", 1},
		{"gpu_mem_used_gb", 6}, // largest sample in [10, 20]; 9 GB at t = 21 is after it
		{"run_count", 4},
	} {
		if got := num(t, res, c.name); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	// CV 5 % is not < 5: variable.
	if got := res.Values["stability"].Value; got != "variable" {
		t.Errorf("stability = %v, want variable", got)
	}
	for _, name := range []string{"output_not_empty", "no_early_stop", "tok_per_sec_steady", "no_memory_pressure", "no_other_engine"} {
		if p := res.Values[name].Passed; p == nil || !*p {
			t.Errorf("gate %s did not pass on a clean run: %+v", name, res.Values[name])
		}
	}
	if res.Excluded {
		t.Errorf("clean run excluded: %s", res.ExcludeReason)
	}
}

// Edge cases 1 and 2: each degenerate case is "not applicable" with its
// reason, never a NaN, an Inf or a silent class.
func TestAsiaiEdgeCases(t *testing.T) {
	cases := []struct {
		name   string
		modify func(*record.Run)
		want   map[string]string // result → note it must carry
	}{
		{"runs at 0 tok/s: CV = 0/0", func(r *record.Run) {
			for i := range r.Requests {
				r.Requests[i].DoneAt = r.Requests[i].FirstTokenAt + 0.005 // generation < 10 ms: 0 tok/s
			}
		}, map[string]string{"cv_pct": "CV = 0/0", "stability": "CV = 0/0"}},
		{"no prompt ran twice", func(r *record.Run) {
			for i := range r.Requests {
				r.Requests[i].PromptID = fmt.Sprint("p", i)
			}
		}, map[string]string{"std_dev_tok_s": "no prompt ran twice", "cv_pct": "no prompt ran twice", "stability": "no prompt ran twice"}},
		{"every run failed", func(r *record.Run) {
			for i := range r.Requests {
				if r.Requests[i].Phase == "formal" {
					r.Requests[i].OK = false
				}
			}
		}, map[string]string{"tok_per_sec": "every run failed", "stability": "every run failed", "tok_per_sec_per_watt": "every run failed"}},
		{"every power sample reads 0 W", func(r *record.Run) {
			for i := range r.Power {
				r.Power[i].PowerW = 0
			}
		}, map[string]string{"power_watts": "no power reading", "tok_per_sec_per_watt": "no power reading"}},
		{"no power source", func(r *record.Run) { r.Power = nil }, map[string]string{"power_watts": "no power source", "tok_per_sec_per_watt": "no power source"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := asiaiRun()
			c.modify(run)
			res := evalAsiai(t, run, nil)
			for name, note := range c.want {
				r := res.Values[name]
				if r.Value != nil || !strings.Contains(r.Note, "not applicable") || !strings.Contains(r.Note, note) {
					t.Errorf("%s = %v, note %q; want not applicable: …%s…", name, r.Value, r.Note, note)
				}
			}
		})
	}
}

// Each quality gate fires on its own defect and not on the clean run
// (TestAsiaiHandValues).
func TestAsiaiGates(t *testing.T) {
	cases := []struct {
		name     string
		sets     map[string]string
		modify   func(*record.Run)
		gate     string
		excluded bool
	}{
		{"empty output", nil, func(r *record.Run) { r.Requests[2].OutputChars = 0 }, "output_not_empty", true},
		{"no tokens", nil, func(r *record.Run) { r.Requests[2].OutputTokens = 0 }, "output_not_empty", true},
		// 6 tokens of 64 < 0.1 × 64 = 6.4.
		{"early stop", nil, func(r *record.Run) { r.Requests[1].OutputTokens = 6 }, "no_early_stop", false},
		// a: 100 then 120 tok/s (60 tokens in 0.5 s): 20 % > 15 %.
		{"tok/s drift", nil, func(r *record.Run) { r.Requests[3].OutputTokens = 60 }, "tok_per_sec_steady", false},
		// the clean run's 10 % drift fails a 5 % limit: the parameter is wired.
		{"drift limit from the parameter", map[string]string{"tps_drift_max_pct": "5"}, func(*record.Run) {}, "tok_per_sec_steady", false},
		{"swap in use", nil, func(r *record.Run) { r.Meta.Labels["host_swap_used"] = "512 MiB" }, "no_memory_pressure", false},
		{"another engine", nil, func(r *record.Run) { r.Meta.Labels["other_engine_processes"] = "ollama (pid 42)" }, "no_other_engine", false},
		// one token repeated: 1 distinct text ≤ 2.
		{"one token repeated", nil, func(r *record.Run) { r.Requests[2].DistinctChunks = 1 }, "output_not_degenerate", true},
		// 3 distinct texts fail a limit of 3: the parameter is wired.
		{"degenerate limit from the parameter", map[string]string{"degenerate_max_distinct": "3"}, func(r *record.Run) { r.Requests[2].DistinctChunks = 3 }, "output_not_degenerate", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := asiaiRun()
			c.modify(run)
			res := evalAsiai(t, run, c.sets)
			r := res.Values[c.gate]
			if r.Passed == nil || *r.Passed {
				t.Errorf("gate %s did not fire: %+v", c.gate, r)
			}
			if res.Excluded != c.excluded {
				t.Errorf("excluded = %v, want %v (%s)", res.Excluded, c.excluded, res.ExcludeReason)
			}
		})
	}
	// Degenerate output: 3 distinct texts > 2 passes; without the field
	// (older archives) the gate is not applicable, not passed or failed.
	run := asiaiRun()
	run.Requests[2].DistinctChunks = 3
	if p := evalAsiai(t, run, nil).Values["output_not_degenerate"].Passed; p == nil || !*p {
		t.Error("output_not_degenerate fired at 3 distinct chunk texts (limit 2)")
	}
	if r := evalAsiai(t, asiaiRun(), nil).Values["output_not_degenerate"]; r.Passed != nil || r.Note == "" {
		t.Errorf("output_not_degenerate without distinct_chunks: %+v, want not applicable with a reason", r)
	}
	// 7 tokens of 64 ≥ 6.4: not early.
	run = asiaiRun()
	run.Requests[1].OutputTokens = 7
	if p := evalAsiai(t, run, nil).Values["no_early_stop"].Passed; p == nil || !*p {
		t.Error("no_early_stop fired at 7 of 64 tokens (limit 6.4)")
	}
}

// The drift gate's detail prints the percentage rounded to 0.1 %: prompt
// a at 100 then 114 tok/s (57 tokens in 0.5 s) drifts (114 - 100) / 100 ×
// 100 = 14 %, which float arithmetic makes 14.000000000000002.
func TestAsiaiDriftDetailRounded(t *testing.T) {
	run := asiaiRun()
	run.Requests[3].OutputTokens = 57
	r := evalAsiai(t, run, map[string]string{"tps_drift_max_pct": "5"}).Values["tok_per_sec_steady"]
	if r.Passed == nil || *r.Passed || !strings.HasSuffix(r.Message, ": 14 %") {
		t.Errorf("tok_per_sec_steady = %+v, want failed with detail \"14 %%\"", r)
	}
}
