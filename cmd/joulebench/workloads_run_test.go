package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// quickRunArgs are a short benchmark-1.5 run on the simulator.
func quickRunArgs(dir string, extra ...string) []string {
	return append([]string{"run", "benchmark-1.5", "--out", dir, "--no-progress",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=5s", "--set", "sample_interval=100ms",
		"--set", "accept_unsteady=true", "--set", "warmup_requests=2"}, extra...)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// multiTurnRun runs six two-turn conversations, one at a time, on the
// quick simulator (with --sim-preset preset when not empty).
func multiTurnRun(t *testing.T, preset string) (*record.Run, *record.Results) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "conversations.jsonl")
	var b strings.Builder
	for i := range 6 {
		first := fmt.Sprintf("conversation %d: ", i) + strings.Repeat("the river runs past the old mill ", 250)
		second := strings.Repeat("and what happened next? ", 20)
		rec, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("c%d", i), "turns": []any{
			map[string]any{"user": first[:8000], "max_tokens": 8}, map[string]any{"user": second[:400], "max_tokens": 8}}})
		b.Write(rec)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := quickRunArgs(dir, "--dataset", data, "--dataset-format", "conversation", "--set", "mode=concurrency", "--set", "concurrency=1", "--set", "max_tokens=0", "--set", "ignore_eos=true", "--set", "warmup_requests=25")
	if preset != "" {
		args = append(args, "--sim-preset", preset)
	}
	_, errOut, code := runCLI(t, args...)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	res, err := archive.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	return run, res
}

func value(t *testing.T, res *record.Results, name string) float64 {
	t.Helper()
	v, ok := res.Values[name].Value.(float64)
	if !ok {
		t.Fatalf("%s = %v (%s), not a number", name, res.Values[name].Value, res.Values[name].Note)
	}
	return v
}

// A multi-turn run on the simulator with its prefix cache gives per-turn
// results, and later turns' TTFT is lower than first turns' by what the
// cache model predicts; the run's J/token falls with the prefill time
// saved.
//
// Six two-turn conversations, one at a time (mode concurrency 1), the
// quick simulator (QuickSpeed 3: every time divided by 3), DefaultConfig's
// StepBaseS 0.02 s and PrefillTokPerS 20000, a token per 4 characters,
// 16-token blocks of 64 characters:
//
//   - turn 1: 8000 characters = 2000 prompt tokens, none cached; alone in
//     the batch: TTFT = (0.02 + 2000/20000)/3 = 40 ms.
//
//   - turn 2: the same 8000 characters (125 blocks, cached by turn 1), the
//     answer, 400 more characters: 2000 cached tokens, and TTFT =
//     (0.02 + (prompt_tokens - 2000)/20000)/3; about (0.02 + 110/20000)/3
//     = 8.5 ms, where without the cache it would be 40 ms more.
//
//   - the formal stage: the same requests and tokens with and without the
//     cache (the answers are seeded by prompt). Without the cache turn 2
//     prefills its whole prompt, about 2110 tokens: more than a step's
//     PrefillChunkTokens (2048), so two steps, (2·0.02 + 2110/20000)/3;
//     with it one step of about 110 tokens, (0.02 + 110/20000)/3. The
//     requests' own time (Σ done_at - sent_at) is then 6 · (0.02 +
//     2000/20000)/3 = 0.24 s shorter with the cache.
//     The stage also holds the client's gaps between turns, which a loaded
//     machine (the race detector) stretches, so the stage's energy is
//     checked against its own measured shortening: lower by that time at
//     the stage's mean power (avg_gpu_power_w: the simulated GPUs' power
//     lags their activity, so it is the stage's mean rather than the
//     prefill's target that the saved time is drawn at), the same output
//     tokens.
//
//   - per turn, by residency (each turn's energy from its send to its end,
//     prefill included; one conversation at a time, so a turn is alone
//     while resident): turn 2 of conversation i lasts its prefill saving
//     Δ_i = (2000 - (prompt_tokens_i - 2000))/20000/3 s less than turn 1
//     (about (2000 - 110)/60000 = 31.5 ms), both decode 8 tokens the
//     same way, so j_per_token_first_turns - j_per_token_later_turns =
//     mean(Δ_i) · P / 8 at the GPUs' power P: about 0.0315 · 170 / 8 =
//     0.67 J/token at the stage's mean power. Every turn generates exactly
//     8 tokens (ignore_eos), and 25 warm-up requests let the simulated
//     GPUs' power settle after loading (it decays with a 2/3 s time
//     constant), so P is close to flat over the stage: checked within
//     ±20 %.
//
//   - without the cache, turn 2 prefills its whole prompt in two steps:
//     (0.02 + 2000/20000)/3 = 40 ms per turn longer than with the cache,
//     so its J/token is 0.04 · P / 8 higher, within the same margin.
func TestRunMultiTurnOnSim(t *testing.T) {
	run, res := multiTurnRun(t, "prefix-cache")
	var first, later []float64
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		if !r.OK || r.ConversationID == "" {
			t.Fatalf("formal request %+v", r)
		}
		ttft := (r.FirstTokenAt - r.SentAt) * 1000
		switch r.Turn {
		case 1:
			if r.PromptTokens != 2000 || r.CachedPromptTokens != 0 {
				t.Errorf("%s turn 1: %d prompt tokens, %d cached", r.ConversationID, r.PromptTokens, r.CachedPromptTokens)
			}
			first = append(first, ttft)
		case 2:
			if r.CachedPromptTokens != 2000 {
				t.Errorf("%s turn 2: %d cached prompt tokens, want 2000", r.ConversationID, r.CachedPromptTokens)
			}
			want := (0.02 + float64(r.PromptTokens-2000)/20000) / 3 * 1000
			if ttft < want-1 || ttft > want+15 {
				t.Errorf("%s turn 2: TTFT %.2f ms, want %.2f", r.ConversationID, ttft, want)
			}
			later = append(later, ttft)
		}
	}
	if len(first) != 6 || len(later) != 6 {
		t.Fatalf("%d first and %d later turns, want 6 each", len(first), len(later))
	}
	if m := median(first); m < 40-1 || m > 40+15 {
		t.Errorf("first turns' median TTFT %.2f ms, want 40", m)
	}
	for name, want := range map[string]float64{"ttft_first_turn_p50_ms": median(first), "ttft_later_turns_p50_ms": median(later)} {
		if v := value(t, res, name); math.Abs(v-want) > 1e-6 {
			t.Errorf("%s = %v, want %.4f (from requests.jsonl)", name, v, want)
		}
	}
	// 6·2000 cached of 6·2000 + 6·(about 2110) prompt tokens: about 0.486
	if v := value(t, res, "cached_prompt_token_share"); v < 0.4 || v > 0.5 {
		t.Errorf("cached_prompt_token_share = %v", v)
	}
	saved := 0.0 // Σ Δ_i
	for _, r := range run.Requests {
		if r.Phase == "formal" && r.Turn == 2 {
			saved += float64(2000-(r.PromptTokens-2000)) / 20000 / 3
		}
	}
	jFirst, jLater := value(t, res, "j_per_token_first_turns"), value(t, res, "j_per_token_later_turns")
	wantDiff := saved / 6 * value(t, res, "avg_gpu_power_w") / 8
	t.Logf("per-turn J/token: first %.4f, later %.4f; predicted difference %.4f", jFirst, jLater, wantDiff)
	if d := jFirst - jLater; d < wantDiff*0.8 || d > wantDiff*1.2 {
		t.Errorf("later turns' J/token %.4f lower than first turns' %.4f by %.4f, want %.4f (the prefill the cache saves)", jLater, jFirst, d, wantDiff)
	}

	noRun, noRes := multiTurnRun(t, "")
	dur := func(r *record.Run) float64 { s, _ := r.Meta.StageByName("formal"); return s.End - s.Start }
	resident := func(r *record.Run) (sum float64) {
		for _, q := range r.Requests {
			if q.Phase == "formal" {
				sum += q.DoneAt - q.SentAt
			}
		}
		return sum
	}
	dt := dur(noRun) - dur(run)
	eWith := value(t, res, "formal_j_per_token") * value(t, res, "output_throughput_tok_s") * dur(run)
	eWithout := value(t, noRes, "formal_j_per_token") * value(t, noRes, "output_throughput_tok_s") * dur(noRun)
	t.Logf("formal stage %.3f s with the cache, %.3f s without (requests' own time %.3f s, %.3f s); energy %.1f J, %.1f J",
		dur(run), dur(noRun), resident(run), resident(noRun), eWith, eWithout)
	if d := resident(noRun) - resident(run); d < 0.24-0.03 || d > 0.24+0.03 {
		t.Errorf("requests' own time %.3f s shorter with the cache, want 0.24 s", d)
	}
	// The stage is the requests' time plus the client's gaps between a
	// turn's answer and the next turn's send, which a loaded machine
	// stretches differently in the two runs (CI under -race: 0.178 s
	// shorter for 0.214 s the requests saved): half the saving is held.
	if dt < 0.24/2 {
		t.Errorf("formal stage %.3f s shorter with the cache, want at least half the 0.24 s the requests saved", dt)
	}
	if de, want := eWithout-eWith, dt*value(t, res, "avg_gpu_power_w"); de < want*0.7 || de > want*1.3 {
		t.Errorf("formal energy %.1f J lower with the cache, want %.3f s at %.1f W = %.1f J", de, dt, value(t, res, "avg_gpu_power_w"), want)
	}
	noLater := value(t, noRes, "j_per_token_later_turns")
	wantLater := (0.02 + 2000.0/20000) / 3 * value(t, noRes, "avg_gpu_power_w") / 8
	t.Logf("later turns' J/token without the cache %.4f, with it %.4f; predicted difference %.4f", noLater, jLater, wantLater)
	if d := noLater - jLater; d < wantLater*0.8 || d > wantLater*1.2 {
		t.Errorf("later turns' J/token %.4f with the cache, %.4f without: difference %.4f, want %.4f", jLater, noLater, d, wantLater)
	}
	if value(t, res, "formal_j_per_token") >= value(t, noRes, "formal_j_per_token") {
		t.Errorf("formal J/token %v with the cache, %v without: want lower", value(t, res, "formal_j_per_token"), value(t, noRes, "formal_j_per_token"))
	}
}

// A replayed Azure-format trace: each request is sent within 5 ms of its
// scaled timestamp (from requests.jsonl), and run.json names the trace,
// its sha256 and the window.
func TestRunTraceReplayOnSim(t *testing.T) {
	trace, err := filepath.Abs(filepath.Join("..", "..", "workload", "testdata", "traces", "azure-2023.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	// The window [1 s, 3 s) holds the rows of lines 6-9 (their offsets
	// 1.238394, 1.276050, 2.140915, 2.512678 s, worked out from the file's
	// timestamps); at scale 0.5 they are sent (offset - 1)·0.5 = 0.119197,
	// 0.138025, 0.5704575 and 0.756339 s into the stage.
	_, errOut, code := runCLI(t, quickRunArgs(dir, "--dataset", "trace:"+trace+",scale=0.5,start=1s,duration=2s", "--set", "max_tokens=0")...)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	tw := run.Meta.RequestSet.Trace
	if tw == nil || tw.SHA256 != "147aac3ff7c87e101700df378d46a1a0a20d29afdf46434de689e029540248fe" || tw.StartS != 1 || tw.DurationS != 2 ||
		tw.Scale != 0.5 || tw.Requests != 4 || tw.TotalRows != 300 || tw.Format != "azure" {
		t.Fatalf("request_set.trace %+v", tw)
	}
	if lm := run.Meta.RequestSet.LengthMethod; lm != "tokenize" {
		t.Errorf("request_set.length_method %q, want tokenize (the simulator counts tokens)", lm)
	}
	want := []float64{0.119197, 0.138025, 0.5704575, 0.756339}
	var sent []float64
	for _, r := range run.Requests {
		if r.Phase == "formal" {
			sent = append(sent, r.SentAt)
		}
	}
	sort.Float64s(sent)
	if len(sent) != len(want) {
		t.Fatalf("%d formal requests, want %d", len(sent), len(want))
	}
	for i := range sent {
		got := sent[i] - sent[0]
		if d := got - (want[i] - want[0]); math.Abs(d) > 0.005 {
			t.Errorf("request %d sent %.4f s after the first, want %.4f", i, got, want[i]-want[0])
		}
	}
}

// The shared-prefix set on the simulator with its prefix cache: every
// request but the first of each group (prefix-1-1, prefix-2-2; the
// warm-up's prompts are drawn with another seed) finds its group's prefix
// cached, the first ones none. A 512-token prefix is 2048 characters
// at the simulator's 4 a token (lengths fitted by its tokenizer, a word
// about 5.5 characters with its space, to within a few words): 32 blocks
// of 16 tokens, give or take one.
func TestRunSharedPrefixOnSim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, errOut, code := runCLI(t, quickRunArgs(dir, "--dataset", "prefix:prefixes=2,prefix_len=512,suffix_len=16,output_len=8",
		"--sim-preset", "prefix-cache", "--set", "request_count=8", "--set", "mode=concurrency", "--set", "concurrency=1", "--set", "max_tokens=0")...)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	n := 0
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		n++
		if r.PromptID == "prefix-1-1" || r.PromptID == "prefix-2-2" {
			if !r.OK || r.CachedPromptTokens != 0 {
				t.Errorf("%s: ok %v, %d cached, want none", r.PromptID, r.OK, r.CachedPromptTokens)
			}
			continue
		}
		if !r.OK || r.CachedPromptTokens < 31*16 || r.CachedPromptTokens > 33*16 || r.OutputTokens != 8 {
			t.Errorf("%s: ok %v, %d cached of %d prompt tokens, %d output", r.PromptID, r.OK, r.CachedPromptTokens, r.PromptTokens, r.OutputTokens)
		}
	}
	if n != 8 || run.Meta.RequestSet.LengthMethod != "tokenize" {
		t.Errorf("%d formal requests, length method %q", n, run.Meta.RequestSet.LengthMethod)
	}
}

// The ShareGPT multi-turn fixture as a conversation dataset: ten
// conversations at once, each later turn carrying its history, which the
// simulator's cache holds (whole 64-character blocks of the turns before:
// every first human turn of the fixture has at least 10 words, over 64
// characters), and the per-turn results are shown.
func TestRunShareGPTMultiTurnFixture(t *testing.T) {
	data, err := filepath.Abs(filepath.Join("..", "..", "workload", "testdata", "conversations", "sharegpt-multiturn.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	_, errOut, code := runCLI(t, quickRunArgs(dir, "--dataset", data, "--dataset-format", "conversation", "--sim-preset", "prefix-cache",
		"--set", "request_count=10", "--set", "max_tokens=16")...)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	convs := map[string]int{}
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		convs[r.ConversationID]++
		if !r.OK || r.Turn < 1 || (r.Turn > 1 && r.CachedPromptTokens < 16) || (r.Turn == 1 && r.CachedPromptTokens != 0) {
			t.Errorf("%s turn %d: ok %v, %d cached of %d prompt tokens", r.ConversationID, r.Turn, r.OK, r.CachedPromptTokens, r.PromptTokens)
		}
	}
	if len(convs) != 10 || convs["conv-001"] != 4 {
		t.Errorf("turns per conversation %v, want 10 conversations, conv-001 with 4", convs)
	}
	res, err := archive.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"ttft_first_turn_p50_ms", "ttft_later_turns_p50_ms", "cached_prompt_token_share", "j_per_token_first_turns", "j_per_token_later_turns"} {
		value(t, res, m)
	}
}
