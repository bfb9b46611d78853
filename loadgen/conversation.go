package loadgen

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// ConversationConfig says how a conversation set is sent.
type ConversationConfig struct {
	// Phase and Model are every turn's.
	Phase, Model string
	// Concurrency is the number of conversations in progress at once; the
	// next one starts when one ends. 0: all at once.
	Concurrency int
	// MaxDuration, when > 0, stops starting turns after this long and
	// cancels the turns in flight.
	MaxDuration time.Duration
	// Limits bound each turn's request.
	Limits Limits
}

// RunConversations sends each conversation turn by turn: a turn's request
// carries the conversation so far — its system message, the earlier user
// turns and the engine's own answers to them (captured through
// workload.Request.Answer, so a client that cannot capture answers sends
// empty ones) — and is sent once the previous turn's answer is complete
// and the turn's think time has passed. A conversation whose turn fails
// ends there: its later turns are recorded as failed, not sent (they
// would lack the answer). Requests are
// recorded with conversation_id and turn (1-based); ids are
// "<phase>-c<conversation index, 5 digits>-t<turn>".
//
// sink receives each finished turn once, from one goroutine. It returns
// ctx.Err() when ctx was cancelled.
func RunConversations(ctx context.Context, cfg ConversationConfig, set *workload.ConversationSet, d Doer, sink func(record.Request)) error {
	if cfg.Concurrency < 0 || cfg.MaxDuration < 0 || cfg.Limits.Timeout < 0 || cfg.Limits.Stall < 0 {
		return fmt.Errorf("conversations: concurrency %d, max duration %v and limits must be >= 0", cfg.Concurrency, cfg.MaxDuration)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.MaxDuration > 0 {
		t := time.AfterFunc(cfg.MaxDuration, func() { cancel(ErrMaxDuration) })
		defer t.Stop()
	}
	n := cfg.Concurrency
	if n == 0 || n > len(set.Conversations) {
		n = len(set.Conversations)
	}
	done := make(chan record.Request, 64)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for rec := range done {
			sink(rec)
		}
	}()
	next := make(chan int)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				converse(runCtx, cfg, set, i, d, done)
			}
		}()
	}
feed:
	for i := range set.Conversations {
		select {
		case next <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(done)
	<-collected
	return ctx.Err()
}

// converse sends conversation i's turns in order.
func converse(ctx context.Context, cfg ConversationConfig, set *workload.ConversationSet, i int, d Doer, done chan<- record.Request) {
	c := set.Conversations[i]
	var msgs []workload.Message
	if c.System != "" {
		msgs = append(msgs, workload.Message{Role: "system", Content: c.System})
	}
	for k, turn := range c.Turns {
		if k > 0 && turn.Think > 0 && !sleepCtx(ctx, turn.Think) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		msgs = append(msgs, workload.Message{Role: "user", Content: turn.User})
		var answer strings.Builder
		req := workload.Request{
			ID:          fmt.Sprintf("%s-c%05d-t%d", cfg.Phase, i, k+1),
			Phase:       cfg.Phase,
			PromptID:    fmt.Sprintf("%s#%d", c.ID, k+1),
			Model:       cfg.Model,
			Messages:    append([]workload.Message(nil), msgs...),
			MaxTokens:   turn.MaxTokens,
			Temperature: set.Options.Temperature,
			IgnoreEOS:   set.Options.IgnoreEOS,
			Chat:        true,
			Answer:      &answer,
		}
		rec := doLimited(ctx, d, req, cfg.Limits)
		rec.ConversationID, rec.Turn = c.ID, k+1
		done <- rec
		if !rec.OK {
			if ctx.Err() == nil {
				notSent(cfg, set, i, k+1, rec, done)
			}
			return
		}
		msgs = append(msgs, workload.Message{Role: "assistant", Content: answer.String()})
	}
}

// notSent records the turns after a failed one as failed without sending
// them (they would lack the answer they follow), at the failure's time, so
// that every turn of the set is recorded.
func notSent(cfg ConversationConfig, set *workload.ConversationSet, i, from int, failed record.Request, done chan<- record.Request) {
	c := set.Conversations[i]
	for k := from; k < len(c.Turns); k++ {
		done <- record.Request{ID: fmt.Sprintf("%s-c%05d-t%d", cfg.Phase, i, k+1), Phase: cfg.Phase, PromptID: fmt.Sprintf("%s#%d", c.ID, k+1),
			SentAt: failed.DoneAt, DoneAt: failed.DoneAt, MaxTokens: c.Turns[k].MaxTokens, ConversationID: c.ID, Turn: k + 1,
			Error: fmt.Sprintf("not sent: turn %d of the conversation failed", from)}
	}
}

// doLimited sends one request under limits: through DoFlight for a
// Tracker, else with a timeout on its context.
func doLimited(ctx context.Context, d Doer, req workload.Request, limits Limits) record.Request {
	if t, ok := d.(Tracker); ok {
		f := &Flight{ID: req.ID, Start: time.Now(), Limits: limits}
		rec := t.DoFlight(ctx, req, f)
		chunks, first := f.Bounded()
		rec.BoundedChunks = chunks
		if first {
			rec.FirstTokenBounded = true
			rec.FirstTokenBoundS = f.FirstWithin().Seconds()
		}
		return rec
	}
	if limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, limits.Timeout, ErrRequestTimeout)
		defer cancel()
	}
	return d.Do(ctx, req)
}

// sleepCtx waits d or until ctx is done; false when ctx ended it.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RunAt sends reqs[i] at offsets[i] from the start (a trace's arrival
// times, workload.Trace.Offsets), each as soon as its time comes whatever
// is in flight, and waits for all to finish. MaxDuration (when > 0) stops
// sending after that long and cancels the requests in flight. sink
// receives each finished request once, from one goroutine.
func RunAt(ctx context.Context, reqs []workload.Request, offsets []time.Duration, limits Limits, maxDuration time.Duration, d Doer, sink func(record.Request)) error {
	if len(offsets) != len(reqs) {
		return fmt.Errorf("replay: %d requests but %d send times", len(reqs), len(offsets))
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] || offsets[0] < 0 {
			return fmt.Errorf("replay: send time %d (%v) before the one before it (%v)", i, offsets[i], offsets[i-1])
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if maxDuration > 0 {
		t := time.AfterFunc(maxDuration, func() { cancel(ErrMaxDuration) })
		defer t.Stop()
	}
	done := make(chan record.Request, 64)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for rec := range done {
			sink(rec)
		}
	}()
	// A Preparer encodes the bodies and opens connections first: a send
	// is then the write alone (a client stamps sent_at when it has its
	// connection, and a dial under load takes milliseconds).
	if p, ok := d.(Preparer); ok {
		if release := p.Prepare(runCtx, reqs); release != nil {
			defer release()
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, req := range reqs {
		if !waitUntil(runCtx, start.Add(offsets[i])) {
			break
		}
		if runCtx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done <- doLimited(runCtx, d, req, limits)
		}()
	}
	wg.Wait()
	close(done)
	<-collected
	return ctx.Err()
}

// replaySpin is how long before a send time RunAt stops sleeping and
// yields the processor until the time comes: a timer fires late by the
// scheduler's and the system's latency (6 ms seen on a loaded 2-core
// machine), a yield loop by much less.
const replaySpin = 3 * time.Millisecond

// waitUntil returns at t (false when ctx ended first): it sleeps until
// replaySpin before t, then yields until t.
func waitUntil(ctx context.Context, t time.Time) bool {
	if wait := time.Until(t) - replaySpin; wait > 0 && !sleepCtx(ctx, wait) {
		return false
	}
	for time.Now().Before(t) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return true
}
