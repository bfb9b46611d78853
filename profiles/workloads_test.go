package profiles_test

import (
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// workloadRun is sloRun's stage and power (formal [100, 110] s at 200 W:
// 2000 J) with four conversation turns of a reasoning model:
//
//	c1 turn 1 sent 100, first 100.5,  answer 101,    done 102, 40 tok (30 reasoning), 1000 prompt, 0 cached
//	c1 turn 2 sent 102, first 102.125, answer 102.5, done 103, 40 tok (20 reasoning), 1200 prompt, 1024 cached
//	c2 turn 1 sent 100, first 100.75, answer 101.25, done 102, 40 tok (30 reasoning), 1000 prompt, 0 cached
//	c2 turn 2 sent 102, first 102.25, answer 102.75, done 104, 40 tok (20 reasoning), 1300 prompt, 1024 cached
//
// TTFT first turns 500, 750 ms: median 625; later turns 125, 250: median
// 187.5. Cached share 2048 / 4500 = 0.455111. Reasoning 100 of 160
// tokens: share 0.625, J per answer token 2000 / 60 = 33.333, per output
// token 2000 / 160 = 12.5. TTFT to the answer 1000, 500, 1250, 750 ms:
// median (750 + 1000) / 2 = 875.
//
// Per-turn energy by residency ([sent_at, done_at], prefill included,
// each piece split equally among the resident requests, 200 J/s):
// [100, 102] the two first turns, 400 J, 200 J each; [102, 103] the two
// second turns, 200 J, 100 J each; [103, 104] c2t2 alone, 200 J. First
// turns 400 J / 80 tokens = 5 J/token; later turns (100 + 300) J / 80 =
// 5 J/token. (By generation interval, which holds no prefill, they would
// be 3.75 and 4.6875.)
func workloadRun() *record.Run {
	run := sloRun()
	turn := func(conv string, n int, sent, first, answer, done float64, reasoning, prompt, cached int) record.Request {
		return record.Request{ID: conv + "-" + string(rune('0'+n)), Phase: "formal", ConversationID: conv, Turn: n, SentAt: sent, FirstTokenAt: first,
			FirstAnswerAt: answer, DoneAt: done, OutputTokens: 40, ReasoningTokens: reasoning, PromptTokens: prompt, CachedPromptTokens: cached,
			TokensSource: "usage", OK: true}
	}
	run.Requests = []record.Request{
		turn("c1", 1, 100, 100.5, 101, 102, 30, 1000, 0),
		turn("c1", 2, 102, 102.125, 102.5, 103, 20, 1200, 1024),
		turn("c2", 1, 100, 100.75, 101.25, 102, 30, 1000, 0),
		turn("c2", 2, 102, 102.25, 102.75, 104, 20, 1300, 1024),
	}
	return run
}

var workloadMetrics = map[string]float64{
	"ttft_first_turn_p50_ms":    625,
	"ttft_later_turns_p50_ms":   187.5,
	"cached_prompt_token_share": 2048.0 / 4500,
	"j_per_answer_token":        2000.0 / 60,
	"formal_j_per_token":        2000.0 / 160,
	"reasoning_token_share":     0.625,
	"ttft_answer_p50_ms":        875,
	"j_per_token_first_turns":   5,
	"j_per_token_later_turns":   5,
}

func TestWorkloadMetricsHandValues(t *testing.T) {
	for _, prof := range []string{"benchmark-1.5", "benchmark-1.0"} {
		res := evalProfile(t, prof, workloadRun(), nil)
		for m, w := range workloadMetrics {
			if got := num(t, res, m); math.Abs(got-w) > 1e-9*math.Max(1, w) {
				t.Errorf("%s: %s = %v, want %v", prof, m, got, w)
			}
		}
		// A single-turn run without reasoning or cache shows none of them.
		plain := evalProfile(t, prof, sloRun(), nil)
		for m := range workloadMetrics {
			if m == "formal_j_per_token" {
				continue
			}
			if r := plain.Values[m]; r.Value != nil || !strings.HasPrefix(r.Note, "not applicable") {
				t.Errorf("%s: plain run: %s = %v (%q), want not applicable", prof, m, r.Value, r.Note)
			}
		}
	}
}
