// Package loadgen sends a request set to an engine under one of its
// arrival patterns (load shapes, each in its own file and registered once
// in the registry Shapes) and hands every finished request to a sink.
//
//   - unlimited: every request is sent at once, with no rate or concurrency
//     limit (the formal stage of benchmark-1.5);
//   - concurrency: a fixed number of requests in flight, the next one sent
//     as soon as one finishes;
//   - constant, poisson, gamma, ramp (the open modes): each request has a
//     send time from the start (Config.Schedule): a constant rate;
//     exponential gaps; gamma gaps whose shape is vLLM's burstiness; a rate
//     that changes linearly over the stage. Poisson and gamma draw from a
//     seeded generator (the same seed gives the same schedule). Each is
//     optionally capped in requests in flight (MaxConcurrency).
//
// Whatever the shape, requests that are due together (the unlimited
// burst, the first fill of a concurrency stage, a cluster of gamma
// arrivals, several slots freed at once) go to a client that can prepare
// and track them in quick waves that let it read the first responses
// between them (see BurstWave), so that first-token times stay exact; the
// unlimited burst and the first fill are prepared first (Preparer).
//
// Requests are sent in slice order. MaxRequests sends only the first N;
// MaxDuration stops sending after that long and cancels the requests still
// in flight, which are recorded as failed ("cancelled: max duration").
// Cancelling ctx does the same ("cancelled") and Run returns ctx.Err().
// Requests never sent are not recorded.
//
// Limits bound each request (a total timeout and a stall timeout: no bytes
// for that long); a Doer with the Tracker ability enforces both and reports
// the tokens read so far, which Watch hands out at every WatchEvery with
// what the run is waiting on.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// Config says how requests are sent.
type Config struct {
	// Mode is the arrival pattern; "" means Unlimited.
	Mode Mode
	// Concurrency is the number of requests in flight in Concurrency mode
	// (required, >= 1); in an open mode (constant, poisson, gamma, ramp)
	// it is the older spelling of MaxConcurrency.
	Concurrency int
	// MaxConcurrency caps the requests in flight of an open mode (0: no
	// cap); unlimited with a cap is Concurrency mode (see Normalized).
	MaxConcurrency int
	// Rate is the mean arrival rate in requests per second (constant,
	// poisson and gamma; +Inf sends everything at once).
	Rate float64
	// Burstiness is the shape of gamma's gaps (0 reads as 1).
	Burstiness float64
	// RampStartRate and RampEndRate are the ramp's rates in requests per
	// second (see RampArrivals).
	RampStartRate, RampEndRate float64
	// Seed drives the poisson and gamma gaps.
	Seed int64
	// MaxRequests, when > 0, sends only the first MaxRequests requests.
	MaxRequests int
	// MaxDuration, when > 0, stops sending after this long and cancels the
	// requests in flight.
	MaxDuration time.Duration
	// Limits bound each request (zero values: the client's defaults).
	Limits Limits
	// Watch, when set, is told what the run waits on (the requests in
	// flight) every WatchEvery while at least one is in flight; it is
	// called from the goroutine that calls sink and progress.
	Watch      func(Waiting)
	WatchEvery time.Duration
}

// Limits and Flight are workload's, so that a client can report into a
// Flight without importing the load generator.
type (
	Limits = workload.Limits
	Flight = workload.Flight
)

// Tracker is a Doer that enforces a Flight's Limits and reports its
// progress into it (the engines' streaming clients are Trackers). Run uses
// DoFlight when a Doer has it; for another Doer it enforces Limits.Timeout
// with the request's context (cause ErrRequestTimeout) and cannot see a
// stall.
type Tracker interface {
	Doer
	DoFlight(ctx context.Context, r workload.Request, f *Flight) record.Request
}

// ErrRequestTimeout is the cause of a request's context when Run enforces
// Limits.Timeout itself (a Doer that is not a Tracker).
var ErrRequestTimeout = errors.New("request timeout")

// Waiting says what a run is waiting on: the requests in flight, the
// oldest of them, and the tokens read so far (reported by a Tracker).
type Waiting struct {
	InFlight     int
	Oldest       string
	OldestAge    time.Duration
	OldestTokens int
	Tokens       int
}

// Doer sends one request and records it. It must return promptly once ctx
// is done (recording the request as cancelled). The engine clients
// (engines/openai, engines/ollama) are Doers; loadgen does not know them.
type Doer interface {
	Do(ctx context.Context, r workload.Request) record.Request
}

// Progress counts requests so far: Sent, Done (finished, successfully or
// not), Failed (finished with ok=false) and Tokens (output tokens of the
// successful ones). BoundedFirst counts the finished requests whose first
// token's time is an upper bound rather than exact, BoundedChunks the text
// chunks of finished requests that are (the client read them together
// with later data; reported by a Tracker, see workload.Flight.AddBounded),
// and BoundedFirstWithin is the widest interval in which such a first
// token arrived (its recorded time is the interval's end).
type Progress struct {
	Sent, Done, Failed, Tokens  int
	BoundedFirst, BoundedChunks int
	BoundedFirstWithin          time.Duration
}

// Preparer is a Doer that can do the costly part of sending ahead of a
// burst (encoding request bodies, opening connections), so that the burst
// itself is little more than the writes and the client is free to read
// the first tokens as they arrive. In Unlimited mode Run calls Prepare
// once with the requests it is about to send, before the first send, and
// calls the release it returns once every request has finished. Prepare is
// best effort: what it could not get ready is done at send time, as
// without it.
//
// A Preparer that is also a Tracker gets its burst in waves (see
// BurstWave): its DoFlight should call Flight.Wrote as soon as a request
// is written, else a wave is only let go once its requests finish or
// after BurstWaveMaxWait.
type Preparer interface {
	Doer
	Prepare(ctx context.Context, reqs []workload.Request) (release func())
}

// The burst of the unlimited mode, for a Preparer that is a Tracker, is
// released in waves: BurstWave requests at a time; the next wave once
// every request of the one before has been written (Flight.Wrote) or has
// finished, and then BurstWavePause has passed and the Go scheduler has
// polled the network (on Linux; elsewhere the pause alone).
//
// Why: while goroutines are runnable Go's scheduler does not poll the
// network (it polls when a processor finds nothing to run, and from
// sysmon every 10 ms, whose finds queue behind the runnable ones), and
// 1,000 sends are ~50-100 ms of a core. Released together, the senders
// keep the processor busy for the whole burst, and a stream whose first
// chunk arrived early is not read until its next chunk has arrived too
// (the kernel merges them and keeps the later time: a bounded first
// token). Between waves the senders have written, nothing is left to run,
// the scheduler polls, and the responses that have arrived are read
// before the next sends. The pause must end with a poll, not on a timer
// alone: a goroutine woken by its timer runs next, ahead of the readers
// already queued (and a timed pause that ends while the wave's senders are
// still runnable leaves the processor never idle: timed waves alone change
// nothing).
//
// The wait is for the writes, never for a response (an engine may take
// seconds to its first token); a wave whose writes take longer than
// BurstWaveMaxWait is let go anyway.
//
// The size: smaller waves put more polls between the sends, so fewer
// first responses come in one engine step. In BenchmarkRunPath's
// configuration B (cmd/joulebench, 1,000 streams, a shared 2-core
// machine), 12 runs each: waves of 16 left no late first token in 11, of
// 32 in 8; the burst is no longer (the pauses overlap the reading).
const (
	BurstWave        = 16
	BurstWavePause   = 200 * time.Microsecond
	BurstWaveMaxWait = 50 * time.Millisecond
)

// ErrMaxDuration is the cause given to the requests cancelled when
// Config.MaxDuration is reached; an openai.Client records them as
// "cancelled: max duration".
var ErrMaxDuration = errors.New("max duration")

// Run sends reqs to d as cfg says and waits for every sent request to
// finish.
//
// sink receives each finished request once, in completion order, and
// progress (if not nil) the counts after each send and completion; both
// are called from one goroutine, never concurrently, so they need no
// locking, but they should be quick: a slow sink delays later calls (never
// the sending). Run returns after the last call.
//
// It returns ctx.Err() when ctx was cancelled, nil when everything (or as
// much as MaxDuration allowed) was sent and finished.
func Run(ctx context.Context, cfg Config, reqs []workload.Request, d Doer, sink func(record.Request), progress func(Progress)) error {
	return run(ctx, cfg, reqs, d, sink, progress, waves{size: BurstWave, pause: BurstWavePause, maxWait: BurstWaveMaxWait})
}

// run is Run with the burst's waves given.
func run(ctx context.Context, cfg Config, reqs []workload.Request, d Doer, sink func(record.Request), progress func(Progress), w waves) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	shape, _ := cfg.Shape()
	if cfg.MaxRequests > 0 && cfg.MaxRequests < len(reqs) {
		reqs = reqs[:cfg.MaxRequests]
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.MaxDuration > 0 {
		timer := time.AfterFunc(cfg.MaxDuration, func() { cancel(ErrMaxDuration) })
		defer timer.Stop()
	}

	r := &runner{
		ctx:     runCtx,
		d:       d,
		limits:  cfg.Limits,
		flights: map[*Flight]struct{}{},
		done:    make(chan record.Request, min(len(reqs), 1<<16)),
		sent:    make(chan struct{}, 1),
	}
	r.tracker, _ = d.(Tracker)
	collected := make(chan struct{})
	go r.collect(sink, progress, cfg.Watch, cfg.WatchEvery, collected)

	// The burst at the start (all of an unlimited stage, the first fill
	// of a concurrency stage) is made ready first (a Preparer's bodies and
	// connections), so that it is as short as it can be; then a Preparer
	// that tells when a request is written gets every send in waves (see
	// BurstWave), any other Doer each send as it comes (an unlimited
	// burst all together).
	p, ok := d.(Preparer)
	if burst := cfg.Burst(reqs); ok && len(burst) > 0 {
		if release := p.Prepare(runCtx, burst); release != nil {
			defer release()
		}
	}
	var slots chan struct{}
	if n := shape.InFlight(); n > 0 {
		slots = make(chan struct{}, n)
	}
	offsets := shape.Schedule(len(reqs))
	switch {
	case ok && r.tracker != nil:
		r.sendPaced(reqs, slots, offsets, w)
	case offsets == nil && slots == nil: // all at once
		r.sendAll(reqs, nil, nil, make(chan struct{}))
	default:
		r.sendAll(reqs, slots, offsets, nil)
	}
	r.wg.Wait()
	close(r.done)
	<-collected
	return ctx.Err()
}

type runner struct {
	ctx     context.Context
	d       Doer
	tracker Tracker // d, when it is one
	limits  Limits
	wg      sync.WaitGroup

	mu      sync.Mutex
	flights map[*Flight]struct{} // in flight

	sentN atomic.Int64
	done  chan record.Request // finished requests
	sent  chan struct{}       // a nudge to report progress after a send
}

// sendAll sends reqs in order; slots (if not nil) bounds the number in
// flight, and offsets (if not nil) are the send times from the start.
// With gate (not nil), every request waits for it, and sendAll closes it
// once all are started (or the run is cancelled).
func (r *runner) sendAll(reqs []workload.Request, slots chan struct{}, offsets []time.Duration, gate chan struct{}) {
	start := time.Now()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if gate != nil {
			close(gate)
		}
	}()
	for i := range reqs {
		if offsets != nil {
			if wait := time.Until(start.Add(offsets[i])); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-timer.C:
				case <-r.ctx.Done():
					return
				}
			}
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-r.ctx.Done():
				return
			}
		}
		if r.ctx.Err() != nil {
			return
		}
		r.launch(reqs[i], slots, gate, nil)
	}
}

// launch starts the goroutine that sends req (after gate, when not nil;
// giving back a slot, when slots is not nil), and counts it as sent.
// written (if not nil) is called once when the request has been written
// or has finished.
func (r *runner) launch(req workload.Request, slots, gate chan struct{}, written func()) {
	r.wg.Add(1)
	r.sentN.Add(1)
	select {
	case r.sent <- struct{}{}:
	default:
	}
	go func() {
		defer r.wg.Done()
		if gate != nil {
			<-gate
		}
		rec := r.do(req, written)
		if slots != nil {
			<-slots
		}
		r.done <- rec
	}()
}

// waves says how a burst is released (see BurstWave).
type waves struct {
	size           int
	pause, maxWait time.Duration
}

// sendPaced sends reqs in order to a Doer that tells when a request is
// written: each when it is due (offsets, from the start; nil: at once) and
// has a slot (slots, when not nil, bounds the requests in flight).
// Requests that are ready together go in waves of up to w.size, all of a
// wave at once. A wave that follows a burst (the wave before was full, or
// is still being written) waits until every request of the one before has
// been written or has finished (or w.maxWait has passed), then until
// w.pause has passed and the scheduler, with no sender to run, has polled
// the network (see newIdleWait), so that the responses that have arrived
// are read first. A lone send (the next of a concurrency stage, a
// scheduled arrival) goes without waiting.
func (r *runner) sendPaced(reqs []workload.Request, slots chan struct{}, offsets []time.Duration, w waves) {
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	idle, closeIdle := newIdleWait()
	defer closeIdle()
	var written chan struct{} // the last wave's: closed once all of it was written
	full := false             // the last wave was cut at w.size
	for i := 0; i < len(reqs); {
		if offsets != nil && !r.sleepUntil(timer, start.Add(offsets[i])) {
			return
		}
		if written != nil && (full || !closed(written)) {
			if !r.waitWritten(timer, written, w.maxWait) {
				return
			}
			idle(w.pause)
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-r.ctx.Done():
				return
			}
		}
		if r.ctx.Err() != nil {
			if slots != nil {
				<-slots
			}
			return
		}
		n := 1 // request i, and those after it that are due and get a slot now
		for n < w.size && i+n < len(reqs) && (offsets == nil || offsets[i+n] <= time.Since(start)) && trySlot(slots) {
			n++
		}
		written = r.launchWave(reqs[i:i+n], slots)
		full = n == w.size
		i += n
	}
}

// launchWave starts the requests of wave (each holding a slot, when slots
// is not nil) and returns a channel closed once every one of them has
// been written or has finished.
func (r *runner) launchWave(wave []workload.Request, slots chan struct{}) chan struct{} {
	written := make(chan struct{})
	left := new(atomic.Int64)
	left.Store(int64(len(wave)))
	onWritten := func() {
		if left.Add(-1) == 0 {
			close(written)
		}
	}
	for _, req := range wave {
		r.launch(req, slots, nil, onWritten)
	}
	return written
}

// sleepUntil waits on timer until t; false when the run was cancelled.
func (r *runner) sleepUntil(timer *time.Timer, t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return r.ctx.Err() == nil
	}
	timer.Reset(wait)
	select {
	case <-timer.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// waitWritten waits on timer until written is closed or maxWait has
// passed; false when the run was cancelled.
func (r *runner) waitWritten(timer *time.Timer, written chan struct{}, maxWait time.Duration) bool {
	timer.Reset(maxWait)
	select {
	case <-written:
	case <-timer.C:
	case <-r.ctx.Done():
		return false
	}
	return true
}

// closed reports whether c is closed.
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// trySlot takes a slot if one is free now (always, when slots is nil).
func trySlot(slots chan struct{}) bool {
	if slots == nil {
		return true
	}
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// do sends one request, watched as a Flight while it is in flight; the
// record says what the Flight counted of bounded chunk times. written (if
// not nil) is called once, when the Doer says the request was written or
// when it returns.
func (r *runner) do(req workload.Request, written func()) record.Request {
	f := &Flight{ID: req.ID, Start: time.Now(), Limits: r.limits, OnWritten: written}
	defer f.Wrote()
	r.mu.Lock()
	r.flights[f] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.flights, f)
		r.mu.Unlock()
	}()
	var rec record.Request
	if r.tracker != nil {
		rec = r.tracker.DoFlight(r.ctx, req, f)
	} else {
		ctx := r.ctx
		if r.limits.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, r.limits.Timeout, ErrRequestTimeout)
			defer cancel()
		}
		rec = r.d.Do(ctx, req)
	}
	chunks, first := f.Bounded()
	rec.BoundedChunks = chunks
	if first {
		rec.FirstTokenBounded = true
		rec.FirstTokenBoundS = f.FirstWithin().Seconds()
	}
	return rec
}

// waiting is a snapshot of the requests in flight.
func (r *runner) waiting(now time.Time) Waiting {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := Waiting{InFlight: len(r.flights)}
	var oldest *Flight
	for f := range r.flights {
		n := f.Tokens()
		w.Tokens += n
		if oldest == nil || f.Start.Before(oldest.Start) || f.Start.Equal(oldest.Start) && f.ID < oldest.ID {
			oldest = f
		}
	}
	if oldest != nil {
		w.Oldest, w.OldestAge, w.OldestTokens = oldest.ID, now.Sub(oldest.Start), oldest.Tokens()
	}
	return w
}

// collect calls sink, progress and watch from one goroutine until done is
// closed.
func (r *runner) collect(sink func(record.Request), progress func(Progress), watch func(Waiting), every time.Duration, finished chan<- struct{}) {
	defer close(finished)
	var tick <-chan time.Time
	if watch != nil {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	var p Progress
	report := func() {
		p.Sent = int(r.sentN.Load())
		if progress != nil {
			progress(p)
		}
	}
	for {
		select {
		case rec, ok := <-r.done:
			if !ok {
				return
			}
			p.Done++
			p.BoundedChunks += rec.BoundedChunks
			if rec.FirstTokenBounded {
				p.BoundedFirst++
				within := time.Duration(math.Round(rec.FirstTokenBoundS * 1e9))
				p.BoundedFirstWithin = max(p.BoundedFirstWithin, within)
			}
			if rec.OK {
				p.Tokens += rec.OutputTokens
			} else {
				p.Failed++
			}
			if sink != nil {
				sink(rec)
			}
			report()
		case <-r.sent:
			report()
		case now := <-tick:
			if w := r.waiting(now); w.InFlight > 0 {
				watch(w)
			}
		}
	}
}

// FromSet turns a frozen request set into requests for the given phase
// and model, with ids "<phase>-<index>" (five digits, zero-padded).
func FromSet(set *workload.RequestSet, phase, model string, chat bool) []workload.Request {
	out := make([]workload.Request, len(set.Prompts))
	for i, p := range set.Prompts {
		out[i] = workload.Request{
			ID:          fmt.Sprintf("%s-%05d", phase, i),
			Phase:       phase,
			PromptID:    p.ID,
			Model:       model,
			Prompt:      p.Prompt,
			Messages:    p.Messages,
			MaxTokens:   p.MaxTokens,
			Temperature: set.Options.Temperature,
			IgnoreEOS:   set.Options.IgnoreEOS,
			Chat:        chat,
		}
	}
	return out
}
