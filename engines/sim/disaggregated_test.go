package sim

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/internal/syncbuf"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// TestDisaggregatedRouter: a request through the router is prefilled on
// the prefill engine, waits the KV transfer, and is decoded by the decode
// engine without prefilling. At speed 1, the 400-token prompt (1600
// chars / 4) takes 400 × 2 ms = 0.8 s to move; the decode engine
// prefills at 10 tokens/s, so prefilling there would take 40 s: the
// answer within 10 s shows it skipped prefill, and its first token no
// sooner than 0.8 s after the send shows the transfer. The prefill
// engine generated one token (max_tokens 1), the decode engine the
// answer's 8.
func TestDisaggregatedRouter(t *testing.T) {
	pre, dec := DefaultConfig(), DefaultConfig()
	pre.StartupS, pre.StoppingS = 0.05, 0.05
	dec.StartupS, dec.StoppingS, dec.PrefillTokPerS = 0.05, 0.05, 10
	d, err := NewDisaggregated(DisaggConfig{Prefill: pre, Decode: dec, GPU: simtel.DefaultConfig(), KVPerTokenS: 0.002})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StartReady(t, d, 10*time.Second)
	id, err := d.Identity(context.Background())
	if err != nil || id.Model != "sim-llm-8b" {
		t.Fatalf("identity %+v, %v", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent := time.Now()
	resp := post(t, ctx, d.BaseURL()+"/v1/chat/completions", chatBody(strings.Repeat("abcd", 400), 8, true, true))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(SimulatedHeader) != "true" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, headers %v: %s", resp.StatusCode, resp.Header, b)
	}
	s := readSSE(t, resp.Body)
	if took := time.Since(sent); took < 800*time.Millisecond || took > 10*time.Second {
		t.Errorf("took %s, want at least the 0.8 s KV transfer and far less than a 40 s prefill", took)
	}
	// role chunk + 8 tokens + finish + usage
	if !s.done || len(s.chunks) != 11 {
		t.Fatalf("%d chunks, [DONE] %v", len(s.chunks), s.done)
	}
	u := s.chunks[10]["usage"].(map[string]any)
	if u["prompt_tokens"] != 400.0 || u["completion_tokens"] != 8.0 {
		t.Errorf("usage %v, want 400 prompt and 8 completion tokens", u)
	}
	pe, de := d.Engines()
	if p, g := pe.sched.snapshot(), de.sched.snapshot(); p.genTotal != 1 || g.genTotal != 8 || p.promptTotal != 400 || g.promptTotal != 400 {
		t.Errorf("prefill engine %d prompt, %d generated; decode engine %d prompt, %d generated; want 400, 1; 400, 8",
			p.promptTotal, p.genTotal, g.promptTotal, g.genTotal)
	}
	rec := d.Record()
	if rec.Entry != "router" || len(rec.Parts) != 3 || rec.Parts[1].Identity == nil || rec.Parts[1].Devices[0] != "sim2" {
		t.Errorf("record %+v", rec)
	}
}

// TestDisaggregatedLogSaysWhose: the parts share one log; each line
// starts with its part's name.
func TestDisaggregatedLogSaysWhose(t *testing.T) {
	var log syncbuf.Buffer
	c := DefaultConfig()
	c.StartupS, c.StoppingS, c.Log = 0.01, 0.01, &log
	d, err := NewDisaggregated(DefaultDisagg(c, simtel.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StartReady(t, d, 10*time.Second)
	if _, err := d.Stop(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		name, _, ok := strings.Cut(line, "] ")
		if !ok || !strings.HasPrefix(name, "[") {
			t.Fatalf("line %q names no part", line)
		}
		seen[name[1:]] = true
	}
	if !seen["prefill"] || !seen["decode"] || !seen["router"] {
		t.Errorf("parts in the log: %v\n%s", seen, log.String())
	}
}
