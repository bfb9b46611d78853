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

// A multi-turn run on the simulator with its prefix cache gives per-turn
// results, and later turns' TTFT is lower than first turns' by what the
// cache model predicts.
//
// Six two-turn conversations, one at a time (mode concurrency 1), the
// quick simulator (QuickSpeed 3: every time divided by 3), DefaultConfig's
// StepBaseS 0.02 s and PrefillTokPerS 20000, a token per 4 characters,
// 16-token blocks of 64 characters:
//   - turn 1: 8000 characters = 2000 prompt tokens, none cached; alone in
//     the batch: TTFT = (0.02 + 2000/20000)/3 = 40 ms.
//   - turn 2: the same 8000 characters (125 blocks, cached by turn 1), the
//     answer, 400 more characters: 2000 cached tokens, and TTFT =
//     (0.02 + (prompt_tokens - 2000)/20000)/3; about (0.02 + 110/20000)/3
//     = 8.5 ms, where without the cache it would be 40 ms + the rest.
//
// The energy per token of a later turn falls with it: the simulated GPU
// no longer prefills 2000 tokens (0.1 s at speed 1) for it.
func TestRunMultiTurnOnSim(t *testing.T) {
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
	_, errOut, code := runCLI(t, quickRunArgs(dir, "--dataset", data, "--dataset-format", "conversation", "--sim-preset", "prefix-cache",
		"--set", "mode=concurrency", "--set", "concurrency=1", "--set", "max_tokens=0")...)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
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
		t.Fatalf("%d first and %d later turns, want 6 each (exit %d)\n%s", len(first), len(later), code, errOut)
	}
	if m := median(first); m < 40-1 || m > 40+15 {
		t.Errorf("first turns' median TTFT %.2f ms, want 40", m)
	}
	res, err := archive.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"ttft_first_turn_p50_ms": median(first), "ttft_later_turns_p50_ms": median(later)} {
		v, ok := res.Values[name].Value.(float64)
		if !ok || math.Abs(v-want) > 1e-6 {
			t.Errorf("%s = %v (%s), want %.4f (from requests.jsonl)", name, res.Values[name].Value, res.Values[name].Note, want)
		}
	}
	if v, ok := res.Values["cached_prompt_token_share"].Value.(float64); !ok || v < 0.4 || v > 0.5 {
		// 6·2000 cached of 6·2000 + 6·(about 2110) prompt tokens: about 0.486
		t.Errorf("cached_prompt_token_share = %v", res.Values["cached_prompt_token_share"].Value)
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
