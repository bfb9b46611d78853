package profiles_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// sloRun is a hand-made archive: formal stage [100, 110] s, one device
// at a constant 200 W sampled every second from 90 to 120 s (so the
// formal energy is 200 W × 10 s = 2000 J), and five successful formal
// requests plus one failed one. Times are multiples of 1/8 s (exact in
// binary). Per request, TTFT = first - sent, TPOT = (done - first) /
// (tokens - 1) (0 under 2 tokens), E2E = done - sent, in ms:
//
//	r1 sent 100, first 100.125, done 101.125, 11 tok: TTFT 125, TPOT 100, E2E 1125
//	r2 sent 100, first 100.5,   done 102.5,   21 tok: TTFT 500, TPOT 100, E2E 2500
//	r3 sent 101, first 101.25,  done 105.25,  21 tok: TTFT 250, TPOT 200, E2E 4250
//	r4 sent 102, first 102.375, done 102.375,  1 tok: TTFT 375, TPOT 0,   E2E 375
//	r5 sent 102, failed (never counted)
//	r6 sent 103, first 103.125, done 109.125, 31 tok: TTFT 125, TPOT 200, E2E 6125
func sloRun() *record.Run {
	run := &record.Run{Meta: record.Meta{
		FormatVersion: 1, RunID: "slo", Status: record.StatusComplete,
		Stages:   []record.Stage{{Name: "formal", Start: 100, End: 110}},
		Hardware: record.Hardware{Devices: []record.Device{{ID: "gpu0", Method: "power"}}},
		Engine:   record.EngineInfo{Kind: "vllm"},
	}}
	for t := 90; t <= 120; t++ {
		run.Power = append(run.Power, record.PowerSample{T: float64(t), Device: "gpu0", PowerW: 200, MemUsedBytes: -1})
	}
	req := func(id string, sent, first, done float64, tok int) record.Request {
		return record.Request{ID: id, Phase: "formal", SentAt: sent, FirstTokenAt: first, DoneAt: done, OutputTokens: tok, TokensSource: "usage", OK: true}
	}
	run.Requests = []record.Request{
		req("r1", 100, 100.125, 101.125, 11),
		req("r2", 100, 100.5, 102.5, 21),
		req("r3", 101, 101.25, 105.25, 21),
		req("r4", 102, 102.375, 102.375, 1),
		{ID: "r5", Phase: "formal", SentAt: 102, OK: false, Error: "connection reset"},
		req("r6", 103, 103.125, 109.125, 31),
	}
	return run
}

func evalProfile(t *testing.T, prof string, run *record.Run, sets map[string]string) *record.Results {
	t.Helper()
	src, err := profiles.Read(prof)
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry(), Overrides: sets})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := workflow.Evaluate(context.Background(), l, run) // the stages this run lacks fail elsewhere
	if res == nil {
		t.Fatal("no results")
	}
	return res
}

var sloMetrics = []string{"slo_attainment", "goodput_rps", "goodput_tok_s", "j_per_good_token", "j_per_good_token_steady"}

// TestSLOHandValues: attainment, goodput and J per good token of sloRun
// under several SLOs, worked out by hand from the table above. The
// steady-state search (window 2, min_windows 2, cv_max 10) starts at the
// first window: r4 has no generation interval and is in no window, so the
// windows are {r1, r2} and {r3, r6} (completion order r1, r4, r2, r3, r6);
// the span runs from the completion of r1, the window's first request, to
// the formal end: [101.125, 110], energy 200 × 8.875 = 1775 J. In it: none
// of r1's tokens (it ends at 101.125), 21 × (102.5 − 101.125) / 2 =
// 14.4375 of r2's (spread over [100.5, 102.5]), r4's 1 (at 102.375), and
// all of r3's and r6's.
func TestSLOHandValues(t *testing.T) {
	cases := []struct {
		name string
		sets map[string]string
		// good requests' count and tokens, and their tokens in the steady
		// span; 0 tokens: the J/token is not applicable
		good, tokens, steadyTokens float64
	}{
		// TPOT ≤ 150: r1 (100), r2 (100), r4 (0, one token): 3 of 5, 11+21+1
		// tokens; in the span 0 + 14.4375 + 1.
		{"tpot", map[string]string{"slo_tpot_ms": "150"}, 3, 33, 15.4375},
		// TTFT ≤ 300 and TPOT ≤ 150: r1 only (r2 TTFT 500, r4 TTFT 375),
		// none of whose tokens is in the span.
		{"ttft and tpot", map[string]string{"slo_ttft_ms": "300", "slo_tpot_ms": "150"}, 1, 11, 0},
		// E2E ≤ 2000: r1 (1125), r4 (375); in the span r4's 1.
		{"e2e", map[string]string{"slo_e2e_ms": "2000"}, 2, 12, 1},
		// E2E ≤ 2500 holds at equality: r1, r2 (2500), r4.
		{"e2e bound inclusive", map[string]string{"slo_e2e_ms": "2500"}, 3, 33, 15.4375},
		// TPOT ≤ 1: only r4, whose single token has TPOT 0.
		{"one-token request has TPOT 0", map[string]string{"slo_tpot_ms": "1"}, 1, 1, 1},
		// TTFT ≤ 1: nobody.
		{"none meets", map[string]string{"slo_ttft_ms": "1"}, 0, 0, 0},
	}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		for _, c := range cases {
			t.Run(prof+"/"+c.name, func(t *testing.T) {
				sets := map[string]string{"window": "2", "min_windows": "2", "cv_max": "10"}
				for k, v := range c.sets {
					sets[k] = v
				}
				res := evalProfile(t, prof, sloRun(), sets)
				want := map[string]float64{
					"slo_attainment": c.good / 5,    // of 5 successful formal requests
					"goodput_rps":    c.good / 10,   // over the 10 s formal stage
					"goodput_tok_s":  c.tokens / 10, // idem
				}
				if c.tokens > 0 {
					want["j_per_good_token"] = 2000 / c.tokens
				}
				if c.steadyTokens > 0 {
					want["j_per_good_token_steady"] = 1775 / c.steadyTokens
				}
				for _, m := range sloMetrics {
					w, ok := want[m]
					r := res.Values[m]
					if !ok {
						if r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
							t.Errorf("%s = %v (%s), want not applicable", m, r.Value, r.Note)
						}
						continue
					}
					if got := num(t, res, m); math.Abs(got-w) > 1e-9*math.Max(1, w) {
						t.Errorf("%s = %v, want %v", m, got, w)
					}
				}
			})
		}
	}
}

// Without an SLO every SLO metric is not applicable and says why.
func TestSLOUnset(t *testing.T) {
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		res := evalProfile(t, prof, sloRun(), map[string]string{"window": "2", "min_windows": "2", "cv_max": "10"})
		for _, m := range sloMetrics {
			r, ok := res.Values[m]
			if !ok || r.Value != nil || !strings.Contains(r.Note, "no SLO set") {
				t.Errorf("%s: %s = %v (%q), want not applicable: no SLO set", prof, m, r.Value, r.Note)
			}
		}
	}
}

// TestEngineStateHand: engine_metrics.jsonl of sloRun with two engines
// (label engine 0 and 1) scraped every 2 s from 99 to 111 s. The steady
// span is taken as the earlier reading (steady_span_start
// earliest_first_token): from the earliest first token of its first window
// {r1, r2}, r1's at 100.125, so that the scrape at 101 s is inside (from
// r1's completion at 101.125 it would not be). Inside [100.125, 110] are
// the scrapes 101 … 109 s:
//
//	running (summed over engines): 3+1, 2+2, 1+1, 1+0, 1+0 = 4, 4, 2, 1, 1 → mean 12/5 = 2.4
//	waiting (summed):              0+1, 0, 0, 0, 0                        → mean 1/5 = 0.2
//	KV usage (fullest engine):     .95, .90, .88, .86, .86                 → mean 4.45/5 = 89 %, max 95 %
//
// The scrapes at 99 and 111 s (running 10) are outside. With a batch limit
// of 4 the check needs 0.8 × 4 = 3.2 > 2.4: it fails and names the KV
// cache (89 % > 85 %); with batch_limit 2 it needs 1.6 and passes.
func TestEngineStateHand(t *testing.T) {
	type names struct{ running, waiting, kv string }
	cases := []struct {
		engine string
		n      names
		edit   func(r *record.Run)
		source string
	}{
		{"vllm", names{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"},
			func(r *record.Run) { r.Meta.Engine.Command = []string{"vllm", "serve", "m", "--max-num-seqs", "4"} }, "engine command --max-num-seqs"},
		{"sglang", names{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage"},
			func(r *record.Run) {
				r.Meta.Engine.Command = []string{"python", "-m", "sglang.launch_server", "--max-running-requests=4"}
			}, "engine command --max-running-requests"},
		{"llamacpp", names{"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio"},
			func(r *record.Run) { r.Meta.Engine.Extra = map[string]any{"slots": float64(4)} }, "run.json engine.extra.slots"},
		{"sim", names{"sim:num_requests_running", "sim:num_requests_waiting", "sim:kv_cache_usage_perc"},
			func(r *record.Run) {
				r.EngineMetrics = append(r.EngineMetrics, record.EngineMetric{T: 99, Name: "sim:num_slots", Value: 4})
			}, "/metrics sim:num_slots"},
	}
	running := map[float64][2]float64{99: {5, 5}, 101: {3, 1}, 103: {2, 2}, 105: {1, 1}, 107: {1, 0}, 109: {1, 0}, 111: {5, 5}}
	waiting := map[float64][2]float64{99: {0, 0}, 101: {0, 1}, 103: {0, 0}, 105: {0, 0}, 107: {0, 0}, 109: {0, 0}, 111: {3, 3}}
	kv := map[float64][2]float64{99: {1, 1}, 101: {0.9, 0.95}, 103: {0.9, 0.8}, 105: {0.88, 0.1}, 107: {0.86, 0.5}, 109: {0.2, 0.86}, 111: {1, 1}}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		for _, c := range cases {
			t.Run(prof+"/"+c.engine, func(t *testing.T) {
				run := sloRun()
				for _, s := range []struct {
					name string
					v    map[float64][2]float64
				}{{c.n.running, running}, {c.n.waiting, waiting}, {c.n.kv, kv}} {
					for ts, v := range s.v {
						for e := range 2 {
							run.EngineMetrics = append(run.EngineMetrics, record.EngineMetric{T: ts, Name: s.name,
								Labels: map[string]string{"engine": string(rune('0' + e))}, Value: v[e]})
						}
					}
				}
				c.edit(run)
				sets := map[string]string{"window": "2", "min_windows": "2", "cv_max": "10", "steady_span_start": "earliest_first_token"}
				res := evalProfile(t, prof, run, sets)
				for m, w := range map[string]float64{"mean_running_batch": 2.4, "mean_waiting_requests": 0.2,
					"mean_kv_cache_usage_pct": 89, "max_kv_cache_usage_pct": 95, "engine_max_batch": 4} {
					if got := num(t, res, m); math.Abs(got-w) > 1e-9*w {
						t.Errorf("%s = %v, want %v", m, got, w)
					}
				}
				r := res.Values["batch_saturated"]
				if r.Passed == nil || *r.Passed || r.Severity != "warn" {
					t.Fatalf("batch_saturated = %+v, want a failed warn check", r)
				}
				for _, w := range []string{"mean running batch 2.4 of limit 4 (" + c.source + "), threshold 3.2", "KV-cache usage 89 %", "above kv_full_pct 85 %"} {
					if !strings.Contains(r.Message, w) {
						t.Errorf("message %q lacks %q", r.Message, w)
					}
				}
				sets["batch_limit"] = "2"
				if r := evalProfile(t, prof, run, sets).Values["batch_saturated"]; r.Passed == nil || !*r.Passed {
					t.Errorf("batch_limit 2: batch_saturated = %+v, want passed (2.4 ≥ 1.6)", r)
				}
				sets["batch_limit"], sets["kv_full_pct"] = "4", "90"
				if r := evalProfile(t, prof, run, sets).Values["batch_saturated"]; r.Passed == nil || *r.Passed || strings.Contains(r.Message, "KV") {
					t.Errorf("kv_full_pct 90: batch_saturated = %+v, want failed without naming the KV cache (89 %% ≤ 90 %%)", r)
				}
			})
		}
	}
}

// Without scrapes or a known batch limit, the engine-state results are not
// applicable and say why; energy is unchanged by the scrapes.
func TestEngineStateAbsent(t *testing.T) {
	sets := map[string]string{"window": "2", "min_windows": "2", "cv_max": "10"}
	res := evalProfile(t, "benchmark-1.5", sloRun(), sets)
	for _, m := range []string{"mean_running_batch", "mean_kv_cache_usage_pct", "engine_max_batch", "batch_saturated"} {
		if r := res.Values[m]; r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
			t.Errorf("%s = %v (%q), want not applicable", m, r.Value, r.Note)
		}
	}
	if got := num(t, res, "formal_j_per_token"); got != 2000.0/85 {
		t.Errorf("formal_j_per_token = %v, want 2000/85", got)
	}
}
