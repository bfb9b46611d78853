package steps

import (
	"context"

	"github.com/joulebench/joulebench/archive"
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
		if c.Mode != "unlimited" || c.Repeat > 1 {
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
		return sendRun(ctx, rc, d, "formal", len(reqs), func(ctx context.Context, sink func(archive.Request), progress func(loadgen.Progress)) error {
			return loadgen.RunAt(ctx, reqs, offsets, lc.Limits, lc.MaxDuration, cl, counting(sink, progress))
		})
	case set.Conversations != nil:
		cc := loadgen.ConversationConfig{Phase: "formal", Model: d.Model, MaxDuration: lc.MaxDuration, Limits: lc.Limits}
		switch c.Mode {
		case "concurrency":
			cc.Concurrency = c.Concurrency
		case "unlimited":
		default:
			rc.Log.Warn().Str("mode", c.Mode).Msg("multi-turn conversations run all at once or a fixed number at a time (mode concurrency): this mode's rate does not apply")
		}
		if c.Repeat > 1 {
			rc.Log.Warn().Int("repeat", c.Repeat).Msg("multi-turn conversations are sent once: repeat does not apply")
		}
		total := set.Conversations.Turns
		if err := setCount(rc, total); err != nil {
			return &outcome{}, err
		}
		return sendRun(ctx, rc, d, "formal", total, func(ctx context.Context, sink func(archive.Request), progress func(loadgen.Progress)) error {
			return loadgen.RunConversations(ctx, cc, set.Conversations, cl, counting(sink, progress))
		})
	}
	return sendWith(ctx, rc, d, cl, "formal", lc, reqs)
}

// counting passes each finished request to sink and reports the counts so
// far to progress (sent counts the finished: these senders report no
// sends of their own).
func counting(sink func(archive.Request), progress func(loadgen.Progress)) func(archive.Request) {
	var p loadgen.Progress
	return func(r archive.Request) {
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
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) { m.RequestSet.Count = n }); err != nil {
		return archiveErr(rc, err)
	}
	return nil
}
