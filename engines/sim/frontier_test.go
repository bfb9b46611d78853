package sim

import (
	"context"
	"testing"
	"time"

	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// TestModelledFrontier checks the shape the small-batch simulator draws:
// with b requests decoding, the step takes StepBaseS + StepPerSeqS·b (the
// TPOT), b tokens come out per step, and the board power is idle + ready
// extra + (max - idle - ready extra)·b/slots. So J/token = P(b)·step(b)/b
// falls and TPOT rises with the batch up to the knee, where the batch
// stops growing. Hand values (one device, 16 slots): b=1: step 20.2 ms,
// P = 60 + 15 + 375/16 = 98.4375 W, J/token = 98.4375 × 0.0202 = 1.9884;
// b=16: step 23.2 ms, P = 450 W, J/token = 450 × 0.0232 / 16 = 0.6525.
func TestModelledFrontier(t *testing.T) {
	c := SmallBatch(DefaultConfig())
	tc := simtel.DefaultConfig()
	jpt := func(b int) float64 {
		p := tc.IdleW + tc.ReadyExtraW + (tc.MaxW-tc.IdleW-tc.ReadyExtraW)*float64(b)/float64(c.Slots)
		return p * c.stepSeconds(b, 0, 0) / float64(b)
	}
	if got := jpt(1); got < 1.9883 || got > 1.9885 {
		t.Errorf("J/token at batch 1 = %.4f, want 1.9884", got)
	}
	if got := jpt(16); got < 0.6524 || got > 0.6526 {
		t.Errorf("J/token at batch 16 = %.4f, want 0.6525", got)
	}
	for b := 2; b <= c.Slots; b++ {
		if jpt(b) >= jpt(b-1) {
			t.Errorf("J/token does not fall from batch %d to %d: %.4f → %.4f", b-1, b, jpt(b-1), jpt(b))
		}
		if c.stepSeconds(b, 0, 0) <= c.stepSeconds(b-1, 0, 0) {
			t.Errorf("TPOT does not rise from batch %d to %d", b-1, b)
		}
	}
}

// TestKVCacheLimitsBatch: requests of 100 prompt + 100 generated tokens in
// a KV cache of 1000 tokens: at most 5 run at once although 64 slots are
// free; all 12 finish.
func TestKVCacheLimitsBatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KVCacheTokens, cfg.Speed, cfg.StepPerSeqS = 1000, 20, 0
	s := newScheduler(cfg, nil)
	go s.run()
	defer s.shutdown(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var qs []*seq
	for range 12 {
		q := &seq{ctx: ctx, prompt: 100, prefillLeft: 100, target: 100, finish: "length", rng: seqRNG(1, "chat", "k", 100, true), out: newStream(), handled: make(chan struct{})}
		qs = append(qs, q)
		if err := s.submit(q); err != nil {
			t.Fatal(err)
		}
	}
	peak := 0
	for _, q := range qs {
		for {
			if st := s.snapshot(); st.running > peak {
				peak = st.running
			}
			_, done, _, err := q.out.take()
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			select {
			case <-q.out.notify:
			case <-ctx.Done():
				t.Fatal("timed out")
			}
		}
	}
	if peak != 5 {
		t.Errorf("peak running batch %d, want 5 (1000 KV tokens / 200 per request)", peak)
	}
}
