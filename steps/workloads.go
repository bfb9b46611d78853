package steps

import (
	"context"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// sendFormal sends the formal requests: a replayed trace at its own
// arrival times (loadgen.RunAt), a multi-turn set conversation by
// conversation (loadgen.RunConversations), any other set under the
// stage's load shape (loadgen.Run).
func sendFormal(ctx context.Context, rc *workflow.RunContext, d *Deps, c *RequestsConfig, cl loadgen.Doer, lc loadgen.Config,
	set *workload.RequestSet, reqs []workload.Request) (*outcome, error) {
	switch {
	case set.Arrivals != nil && len(set.Arrivals) == len(set.Prompts):
		if !lc.AllAtOnce() || c.Repeat > 1 {
			rc.Log.Warn().Str("mode", c.Mode).Int("repeat", c.Repeat).Msg("a replayed trace sends each request at its own time: the stage's mode and repeat do not apply")
		}
		reqs = reqs[:len(set.Prompts)]
		offsets := set.Arrivals
		if c.MaxRequests > 0 && c.MaxRequests < len(reqs) {
			reqs, offsets = reqs[:c.MaxRequests], offsets[:c.MaxRequests]
		}
		if err := setCount(rc, len(reqs)); err != nil {
			return &outcome{}, err
		}
		return sendRun(ctx, rc, d, "formal", len(reqs), func(ctx context.Context, sink func(record.Request), progress func(loadgen.Progress)) error {
			return loadgen.RunAt(ctx, reqs, offsets, lc.Limits, lc.MaxDuration, cl, counting(sink, progress))
		})
	case set.Conversations != nil:
		cc := loadgen.ConversationConfig{Phase: "formal", Model: d.Model, MaxDuration: lc.MaxDuration, Limits: lc.Limits}
		if n, ok := conversationsInFlight(lc); ok {
			cc.Concurrency = n
		} else {
			rc.Log.Warn().Str("mode", c.Mode).Msgf("multi-turn conversations run all at once or a fixed number at a time (mode %s): this mode's rate does not apply", loadgen.Shapes().Role(loadgen.RoleInFlight))
		}
		if c.Repeat > 1 {
			rc.Log.Warn().Int("repeat", c.Repeat).Msg("multi-turn conversations are sent once: repeat does not apply")
		}
		total := set.Conversations.Turns
		if err := setCount(rc, total); err != nil {
			return &outcome{}, err
		}
		return sendRun(ctx, rc, d, "formal", total, func(ctx context.Context, sink func(record.Request), progress func(loadgen.Progress)) error {
			return loadgen.RunConversations(ctx, cc, set.Conversations, cl, counting(sink, progress))
		})
	}
	return sendWith(ctx, rc, d, cl, "formal", lc, reqs)
}

// conversationsInFlight is how many conversations a load shape runs at a
// time (0: all at once): its bound in flight, for a closed shape; ok is
// false for an open one (its schedule does not apply to turns that wait
// on the answers before them).
func conversationsInFlight(lc loadgen.Config) (n int, ok bool) {
	sh, err := lc.Shape()
	if err != nil || sh.Open() {
		return 0, false
	}
	return sh.InFlight(), true
}

// counting passes each finished request to sink and reports the counts so
// far to progress (sent counts the finished: these senders report no
// sends of their own).
func counting(sink func(record.Request), progress func(loadgen.Progress)) func(record.Request) {
	var p loadgen.Progress
	return func(r record.Request) {
		sink(r)
		p.Sent++
		p.Done++
		if !r.OK {
			p.Failed++
		} else {
			p.Tokens += r.OutputTokens
		}
		if progress != nil {
			progress(p)
		}
	}
}

// setCount records the formal requests the stage will send (repeat and
// the load shape's max_requests do not apply to these workloads as to a
// prompt set).
func setCount(rc *workflow.RunContext, n int) error {
	if err := rc.Out.UpdateMeta(func(m *record.Meta) { m.RequestSet.Count = n }); err != nil {
		return archiveErr(rc, err)
	}
	return nil
}
