package steps

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// quickThenStuck answers its first n requests at once and holds the rest
// until the load generator cancels them (a duration limit).
type quickThenStuck struct {
	clock func() float64
	n     int64
	calls atomic.Int64
}

var _ loadgen.Doer = (*quickThenStuck)(nil)

func (c *quickThenStuck) Do(ctx context.Context, r openai.Request) record.Request {
	now := c.clock()
	rec := record.Request{ID: r.ID, Phase: r.Phase, PromptID: r.PromptID, SentAt: now}
	if c.calls.Add(1) > c.n {
		<-ctx.Done()
		rec.DoneAt, rec.Error = c.clock(), "cancelled: max duration"
		return rec
	}
	rec.FirstTokenAt, rec.DoneAt, rec.OutputTokens, rec.OK = now+0.001, now+0.002, 3, true
	return rec
}

// run.json's request_set.count is the number of formal requests the run
// sends, which the reader holds a complete run to: max_requests caps it,
// and a run stopped by max_duration counts what it sent.
func TestRequestSetCountIsWhatWasSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*RequestsConfig)
		want int
	}{
		// 3 prompts (formalConfig), max_requests 2: 2 sent.
		{"max_requests", func(c *RequestsConfig) { c.MaxRequests = 2 }, 2},
		// 3 prompts × repeat 4, one at a time; the first 2 answer, the
		// third hangs until max_duration cancels it: 3 sent, 9 never.
		{"max_duration", func(c *RequestsConfig) {
			c.Mode, c.Concurrency, c.Repeat, c.MaxDuration = "concurrency", 1, 4, workflow.Duration(100*time.Millisecond)
		}, 3},
		{"no limit", func(c *RequestsConfig) { c.Repeat = 2 }, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRC(t)
			cfg := formalConfig()
			tc.cfg(cfg)
			cl := &quickThenStuck{clock: rc.Clock.Now, n: 2}
			if tc.name != "max_duration" {
				cl.n = 1 << 30
			}
			if err := runRequests(context.Background(), rc, &Deps{Engine: newTestEngine("http://x"), Client: cl, External: true}, cfg); err != nil {
				t.Fatal(err)
			}
			if err := rc.Out.UpdateMeta(func(m *record.Meta) { m.Status = record.StatusComplete }); err != nil {
				t.Fatal(err)
			}
			run := reload(t, rc) // a complete run: Load holds it to the count
			formal := 0
			for _, q := range run.Requests {
				if q.Phase == "formal" {
					formal++
				}
			}
			if got := run.Meta.RequestSet.Count; got != tc.want || formal != tc.want {
				t.Errorf("request_set.count %d, %d formal requests recorded; want %d", got, formal, tc.want)
			}
		})
	}
}
