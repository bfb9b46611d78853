package main

// The main done-when: the default benchmark-1.5 profile, against a
// real engine (llama-server with the generated tiny model), with only the
// flags needed to reach it and short stage timings, reaches steady state;
// and the same with --dataset random.
//
// Without a GPU there is no measured power beside a real engine, so the
// power comes from --telemetry replay of a flat recording (100 W) written
// by the test: the run is labelled as replayed (telemetry.simulated), and
// the replay covers every stage boundary (the realtime replay adds the
// interpolated state at each boundary sample).
//
// The configuration makes the formal set generate as one batch that
// starts in one prompt step, so that every piece's energy is shared by the
// same requests and per-request J/token does not depend on how fast the
// (shared, 2-core) CPU happens to be:
//   - --no-cont-batching: llama-server puts prompts into a batch only
//     when no slot is generating. The server starts as soon as the first
//     request arrives, so the first one or few (the early group) generate
//     their 128 tokens alone, while the others arrive and wait in their
//     slots; then every waiting prompt goes into one prompt step and the
//     main group generates in lockstep to the end. With continuous
//     batching (the server's default) every step took in whatever had
//     arrived during the previous one: the set started in 2–3 groups (e.g.
//     4, 71 and 181 requests, 0.9 and 2.4 s apart), the early ones alone
//     through the big prompt step; 2 of 14 default-dataset runs found no
//     steady state (best CV 0.10).
//   - --slots 256 (llama.cpp's most sequences) and request_count=300: the
//     main group holds at most 256; the requests beyond it, and any that
//     reached the server after the main prompt step began, wait and run
//     as a last group. In completion order: early, main, last group, each
//     with its own J/token (0.117, 0.085 and 0.076 J/token in one run at
//     100 W: fewer sequences per step, another throughput). Steady state
//     needs each of the two 100-request windows inside one group and the
//     drain after them to hold the rest. Counted over every group size:
//     with 300 requests that holds for an early group of any size as long
//     as the others all reached the server before the main step; with L
//     of them late, while early + L ≤ 100 (for an early group of up to
//     100). With 256 requests it needed early + L ≤ 56, and early groups
//     of 57–99 or 157–199 failed even with none late; 300 is the smallest
//     count for which no early group fails.
//   - -b 65536: every waiting prompt in one logical batch (300 chat prompts
//     are ~21 000 tokens, 300 random ones of 16 words ~30 000; the default
//     2048 cut them into steps that started requests 0.4–4.7 s apart);
//   - -t 1 -tb 1: no spinning thread barrier on a busy 2-core machine.
// What a group holds: the requests that reached the server while the
// group before it generated. The early group's 128 tokens take 0.35–1 s
// here (its steps are slowed by taking in the arriving requests); the
// client sends the 300 within 0.07–0.18 s, 0.6 s under -race on a loaded
// machine. When the intake is slower than the early group, the groups
// cascade: [1 234 65] in one -race run (21 reached the server after the
// main step began and ran last), [2 22 256 20] in another; both steady,
// as each window fits in a group. A shorter max_tokens shortens that
// margin with the run.
// Measured on 2 busy cores (load average 7–37), 20 runs of this test, 9
// with one core spinning `yes`, 7 under -race: 40 of 40 cases reached
// steady state, from request 1–66 (the first after the groups before the
// main one, or a few of them inside the first window); start groups
// [1 256 43] 13 times, [2 256 42] 7, [256 44] 5 (the first step took 256),
// and [66 234], [56 244], [41 256 3], [15 256 29], [1 20 256 23], …;
// window CVs 0.0003–0.028 (up to 0.020 inside the main group alone, where
// the client's first-token and chunk times differ by tens of ms);
// 23–70 s per case.
// What one slot gave instead (the first setup): its J/token follows the
// CPU's speed and, in llama-server 0.7.0, the queue's length (every result
// wakes every waiting HTTP thread): 128 tokens in 0.03–5 s, window CVs
// 1.5–3.4 with -t 2, 0.36–0.44 with -t 1, and 0.10 with a 170 MB model
// (-embd 1024 -layers 8, 32 tokens, ~10 ms/token).
// The test logs the sizes of the start groups.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// flatPower writes a power.csv of one device at a constant 100 W every
// 0.5 s for two hours (longer than any run of this test).
func flatPower(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t,device,power_w,energy_j,mem_used_bytes\n")
	for i := 0; i <= 14400; i++ {
		fmt.Fprintf(&b, "%g,gpu0,100,,\n", float64(i)*0.5)
	}
	p := filepath.Join(dir, "power.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnginesLlamaCppSteadyState(t *testing.T) {
	bin := llamaServer(t)
	cases := []struct {
		name string
		args []string
	}{
		// The profile's own dataset (chat, 41 prompts drawn by the seeded
		// shuffle); a fixed max_tokens, which the tiny model always
		// reaches.
		{"default dataset", []string{"--set", "max_tokens=128"}},
		// vLLM's random dataset: input and output lengths fixed (16
		// words, ~100 tokens, as long as the chat prompts).
		{"random dataset", []string{"--dataset", "random", "--random-input-len", "16", "--random-output-len", "128", "--random-range-ratio", "0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One retry: on a shared 2-core machine under -race, with the
			// rest of the suite beside it, the burst's intake can cascade
			// into groups whose windows' CVs miss 0.03 (1 run in 3 of the
			// whole suite here, none of 3 alone). The first miss is logged;
			// the test fails when the second run misses too.
			for attempt := 1; ; attempt++ {
				if steadyRun(t, bin, tc.args, attempt == 2) {
					return
				}
			}
		})
	}
}

// steadyRun runs benchmark-1.5 on the real llama-server once and checks
// its archive; it reports false, with the reason logged, when steady
// state was not reached and last is false (the caller tries again).
func steadyRun(t *testing.T, bin string, extra []string, last bool) bool {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	args := append([]string{"run", "benchmark-1.5", "--out", out, "--no-progress",
		"--telemetry", "replay", "--replay", flatPower(t, dir),
		"--engine", "llamacpp", "--engine-bin", bin, "--model-file", tinyModel(t, dir),
		"--slots", "256", "--max-model-len", "512",
		"--engine-arg=-b", "--engine-arg=65536", "--engine-arg=-t", "--engine-arg=1", "--engine-arg=-tb", "--engine-arg=1",
		"--engine-arg=--no-cont-batching",
		// Short stage timings; 300 requests for 256 slots (see
		// the comment above).
		"--set", "baseline=2s", "--set", "release_hold=2s", "--set", "release_max_wait=60s",
		"--set", "sample_interval=250ms", "--set", "warmup_requests=2", "--set", "request_count=300"},
		extra...)
	stdout, stderr, code := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, out)
	m := run.Meta
	if m.Status != record.StatusComplete || m.Engine.Kind != "llamacpp" || !m.Engine.Managed {
		t.Fatalf("run.json: status %q engine %+v", m.Status, m.Engine)
	}
	if m.Telemetry.Source != "replay" || !m.Telemetry.Simulated {
		t.Errorf("telemetry %+v: the replayed power must be labelled", m.Telemetry)
	}
	if v, ok := m.Parameters["accept_unsteady"]; ok && fmt.Sprint(v) == "true" {
		t.Errorf("accept_unsteady = %v", v)
	}
	var formal, ok int
	for _, r := range run.Requests {
		if r.Phase == "formal" {
			formal++
			if r.OK && r.TokensSource == "usage" && r.OutputTokens == 128 {
				ok++
			}
		}
	}
	if formal != 300 || ok != 300 {
		t.Errorf("%d formal requests, %d ok with 128 counted tokens; want 300 and 300", formal, ok)
	}
	res := run.Results.Values
	groups := startGroups(run)
	if c := res["steady_state_reached"]; c.Passed == nil || !*c.Passed {
		msg := fmt.Sprintf("steady state not reached: %s %s (start groups %v: each 100-request window must lie inside one group, see the comment)", c.Message, c.Note, groups)
		if !last {
			t.Logf("first run: %s; running again", msg)
			return false
		}
		t.Fatal(msg)
	}
	t.Logf("steady state from request %v, window CVs %v; start groups %v",
		res["steady_window_first_request"].Value, steadyField(res["steady"], "window_cvs"), groups)
	if v := res["steady_state_j_per_token"]; v.Value == nil {
		t.Errorf("steady_state_j_per_token = %+v", v)
	}
	for _, name := range []string{"tokens_counted", "release_closed", "no_failed_requests", "baseline_idle"} {
		if c := res[name]; c.Passed == nil || !*c.Passed {
			t.Errorf("check %s: %+v", name, c)
		}
	}
	return true
}

// steadyField is one field of the derived value steady (nil when absent).
func steadyField(r record.Result, name string) any {
	if m, ok := r.Value.(map[string]any); ok {
		return m[name]
	}
	return nil
}

// startGroups returns the sizes of the groups of successful formal
// requests that started together, in time order: their first tokens
// sorted, a new group wherever two successive first tokens are more than
// 0.25 s apart (a group's first tokens leave the server within tens of
// milliseconds; two groups are at least one prompt step or one whole
// generation apart).
func startGroups(run *record.Run) []int {
	var sizes []int
	var first []float64
	for _, r := range run.Requests {
		if r.Phase == "formal" && r.OK {
			first = append(first, r.FirstTokenAt)
		}
	}
	slices.Sort(first)
	for i, f := range first {
		if i == 0 || f-first[i-1] > 0.25 {
			sizes = append(sizes, 0)
		}
		sizes[len(sizes)-1]++
	}
	return sizes
}
