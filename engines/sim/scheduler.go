package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/joulebench/joulebench/internal/simhw"
)

// errAborted ends the streams of requests in flight when the engine stops.
var errAborted = errors.New("sim: request aborted: engine stopping")

// stream carries one request's tokens from the scheduler to its HTTP
// handler without ever blocking the scheduler.
type stream struct {
	mu     sync.Mutex
	tokens []string
	done   bool
	finish string
	err    error
	notify chan struct{} // capacity 1: "something new"
}

func newStream() *stream { return &stream{notify: make(chan struct{}, 1)} }

func (s *stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *stream) push(tok string) {
	s.mu.Lock()
	s.tokens = append(s.tokens, tok)
	s.mu.Unlock()
	s.signal()
}

func (s *stream) end(finish string, err error) {
	s.mu.Lock()
	if !s.done {
		s.done, s.finish, s.err = true, finish, err
	}
	s.mu.Unlock()
	s.signal()
}

// take drains the tokens pushed since the last take.
func (s *stream) take() (toks []string, done bool, finish string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	toks, s.tokens = s.tokens, nil
	return toks, s.done, s.finish, s.err
}

// seq is one request inside the scheduler.
type seq struct {
	ctx         context.Context // the HTTP request's; done: client gone
	prompt      int
	cached      int // prompt tokens served by the prefix cache (not prefilled)
	prefillLeft int
	take        int // prompt tokens prefilled in the current step
	target      int
	finish      string
	generated   int
	rng         *rand.Rand
	out         *stream
	handled     chan struct{} // closed when the HTTP handler has returned
}

// stats is the scheduler state published for /metrics and Activity.
type stats struct {
	running, decoding, prefilling, waiting int
	kvTokens                               int
	finished, aborted                      int64
	promptTotal, genTotal                  int64
	// hw is the hardware model's account of the steps run (Config.HW).
	hw hwAccount
}

// hwAccount is one GPU's energy above idle and the wall time of the steps
// the hardware model ran, cumulative, and the last step's clock.
type hwAccount struct {
	energyJ, busyS float64
	clockMHz       float64
	capped         bool
}

// scheduler is continuous batching in one goroutine: each step admits
// waiting requests up to the slot limit, prefills (chunked) and decodes one
// token for every decoding sequence, and sleeps the modelled step time.
type scheduler struct {
	cfg     Config
	onCrash func()

	mu       sync.Mutex
	incoming []*seq
	closed   bool
	st       stats

	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newScheduler(cfg Config, onCrash func()) *scheduler {
	return &scheduler{
		cfg:     cfg,
		onCrash: onCrash,
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// submit queues a request; it fails once the scheduler is shut down.
func (s *scheduler) submit(q *seq) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errAborted
	}
	s.incoming = append(s.incoming, q)
	s.st.promptTotal += int64(q.prompt)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// shutdown aborts every request and stops the loop; it waits for the loop
// when the loop was started.
func (s *scheduler) shutdown(started bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if started {
			<-s.done
		}
		return
	}
	s.closed = true
	in := s.incoming
	s.incoming = nil
	s.mu.Unlock()
	for _, q := range in {
		q.out.end("", errAborted)
	}
	close(s.quit)
	if started {
		<-s.done
	}
}

func (s *scheduler) snapshot() stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.waiting += len(s.incoming)
	return st
}

func (s *scheduler) run() {
	defer close(s.done)
	var waiting, running []*seq
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var finished int64
	var next time.Time // the deadline of the next step (sleepStep)
	for {
		s.mu.Lock()
		waiting = append(waiting, s.incoming...)
		s.incoming = nil
		s.mu.Unlock()

		var n, dropped int64
		waiting, n = dropGone(waiting)
		running, dropped = dropGone(running)
		n += dropped
		waiting, running = s.admit(waiting, running)

		if len(running) == 0 {
			s.publish(running, len(waiting), 0, 0, n)
			next = time.Time{}
			select {
			case <-s.wake:
				continue
			case <-s.quit:
				s.abortAll(running, waiting)
				return
			}
		}

		decoding, prefilling, prefillTok := planStep(running, s.cfg.PrefillChunkTokens)
		stepS, hw := s.cfg.stepOf(running, decoding, prefilling, prefillTok, finished)
		s.publish(running, len(waiting), decoding, prefilling, n)
		if !s.sleepStep(timer, &next, stepS) {
			s.abortAll(running, waiting)
			return
		}
		s.account(hw, stepS)
		running = s.applyStep(running, &finished)
	}
}

// abortAll ends every request the loop holds and clears the state.
func (s *scheduler) abortAll(running, waiting []*seq) {
	for _, q := range append(running, waiting...) {
		q.out.end("", errAborted)
	}
	s.mu.Lock()
	s.st.running, s.st.decoding, s.st.prefilling, s.st.waiting, s.st.kvTokens = 0, 0, 0, 0, 0
	s.mu.Unlock()
}

// admit moves waiting requests to running while there is a free slot and
// room in the KV cache for the request's prompt and every token it may
// generate (reserved at admission); a request larger than the whole cache
// still runs alone. The knee of the frontier is where either runs out.
func (s *scheduler) admit(waiting, running []*seq) ([]*seq, []*seq) {
	reserved := kvReserved(running)
	for len(running) < s.cfg.Slots && len(waiting) > 0 {
		need := waiting[0].prompt + waiting[0].target
		if len(running) > 0 && reserved+need > s.cfg.KVCacheTokens {
			break
		}
		reserved += need
		running = append(running, waiting[0])
		waiting[0] = nil
		waiting = waiting[1:]
	}
	return waiting, running
}

// planStep plans a step: who decodes, who prefills how much (q.take) of
// the chunk budget.
func planStep(running []*seq, budget int) (decoding, prefilling, prefillTok int) {
	for _, q := range running {
		q.take = 0
		switch {
		case q.prefillLeft == 0:
			decoding++
		case budget > 0:
			q.take = min(q.prefillLeft, budget)
			budget -= q.take
			prefillTok += q.take
			prefilling++
		}
	}
	return decoding, prefilling, prefillTok
}

// maxLag is how far behind its schedule the loop may be before the
// schedule restarts from now (sleepStep).
const maxLag = 5 * time.Second

// sleepStep waits for the end of a step of stepS simulated seconds; false
// when the scheduler was shut down meanwhile.
//
// Steps are scheduled on absolute deadlines (next) so that late timer
// wake-ups (a busy machine) are made up by the following steps and the
// long-run token rate stays the modelled one; after an idle period (next
// zero), or when behind by more than maxLag (the process was stopped), the
// schedule restarts from now. maxLag is long: a host busy with other work
// delays wake-ups by tens to hundreds of milliseconds, again and again,
// and each restart would lose that time for good — fewer tokens under the
// same simulated power, so J/token would follow the host's load.
func (s *scheduler) sleepStep(timer *time.Timer, next *time.Time, stepS float64) bool {
	now := time.Now()
	if next.IsZero() || now.Sub(*next) > maxLag {
		*next = now
	}
	*next = next.Add(time.Duration(stepS / s.cfg.Speed * float64(time.Second)))
	timer.Reset(next.Sub(now))
	select {
	case <-timer.C:
		return true
	case <-s.quit:
		timer.Stop()
		return false
	}
}

// applyStep applies a planned step: prefill progresses, every decoding
// request (and one whose prefill completes) gets a token, finished and
// cancelled ones leave. It returns the requests still running; finished
// counts the requests finished since the start.
func (s *scheduler) applyStep(running []*seq, finished *int64) []*seq {
	var gen, fin, aborted int64
	var crashAfter *seq
	kept := running[:0]
	for _, q := range running {
		if q.ctx.Err() != nil {
			q.out.end("", q.ctx.Err())
			aborted++
			continue
		}
		if q.prefillLeft > 0 {
			q.prefillLeft -= q.take
			if q.prefillLeft > 0 || q.take == 0 {
				kept = append(kept, q)
				continue
			}
			// Prefill complete: this step also samples the first token.
		}
		q.out.push(nextToken(q.rng, q.generated))
		q.generated++
		gen++
		if q.generated >= q.target {
			q.out.end(q.finish, nil)
			fin++
			*finished++
			if s.cfg.CrashAfterRequests > 0 && *finished == int64(s.cfg.CrashAfterRequests) {
				crashAfter = q
			}
			continue
		}
		kept = append(kept, q)
	}
	for i := len(kept); i < len(running); i++ {
		running[i] = nil
	}
	s.mu.Lock()
	s.st.genTotal += gen
	s.st.finished += fin
	s.st.aborted += aborted
	s.mu.Unlock()
	if crashAfter != nil && s.onCrash != nil {
		// Die once the last request's response is out (or after 2 s
		// if its handler is stuck), like a process crashing between
		// requests.
		go func(h chan struct{}) {
			t := time.NewTimer(2 * time.Second)
			defer t.Stop()
			select {
			case <-h:
			case <-t.C:
			}
			s.onCrash()
		}(crashAfter.handled)
	}
	return kept
}

// publish records the state of the step about to run.
func (s *scheduler) publish(running []*seq, waiting, decoding, prefilling int, aborted int64) {
	kv := 0
	for _, q := range running {
		kv += q.prompt + q.generated // blocks are allocated at admission
	}
	s.mu.Lock()
	s.st.running = len(running)
	s.st.decoding = decoding
	s.st.prefilling = prefilling
	s.st.waiting = waiting
	s.st.kvTokens = kv
	s.st.aborted += aborted
	s.mu.Unlock()
}

// kvReserved is the KV cache the running requests hold at most: prompt
// and target tokens of each.
func kvReserved(running []*seq) int {
	n := 0
	for _, q := range running {
		n += q.prompt + q.target
	}
	return n
}

// dropGone removes requests whose client went away, ending their streams.
func dropGone(qs []*seq) ([]*seq, int64) {
	var n int64
	kept := qs[:0]
	for _, q := range qs {
		if q.ctx.Err() != nil {
			q.out.end("", q.ctx.Err())
			n++
			continue
		}
		kept = append(kept, q)
	}
	for i := len(kept); i < len(qs); i++ {
		qs[i] = nil
	}
	return kept, n
}

// HWLimits is a GPU whose settings the hardware model runs its steps
// under (telemetry/sim.GPUSettings): the lowest locked maximum clock (0:
// none) and the lowest power limit of the group.
type HWLimits interface {
	HWLimits() (lockMaxMHz, limitW float64)
}

// stepOf is the modelled duration of the planned step (at Speed 1) and,
// under the hardware model, its operating point.
func (c Config) stepOf(running []*seq, decoding, prefilling, prefillTok int, finished int64) (float64, *simhw.Point) {
	if c.HW == nil {
		if c.GPU != nil {
			return c.slowedStepSeconds(c.GPU, decoding, prefilling, prefillTok, finished), nil
		}
		return c.stepSeconds(decoding, prefillTok, finished), nil
	}
	var lock, limit float64
	if l, ok := c.GPU.(HWLimits); ok {
		var mhz float64
		mhz, limit = l.HWLimits()
		lock = mhz / c.HW.GPU.MaxClockMHz
	}
	p := c.HW.Operate(workOf(running), lock, limit)
	return p.StepS * (1 + c.DriftPerRequest*float64(finished)), &p
}

// workOf is what the planned step does for the hardware model: each
// decoding sequence reads its whole context, each prefilling one computes
// its chunk (q.take) attending to the prompt before it.
func workOf(running []*seq) simhw.Work {
	var w simhw.Work
	for _, q := range running {
		switch {
		case q.prefillLeft == 0:
			w.Decoding++
			w.ContextTokens += q.prompt + q.generated
		case q.take > 0:
			done := q.prompt - q.prefillLeft
			w.PrefillTokens += q.take
			w.PrefillContext += q.take * (done + q.take/2)
		}
	}
	return w
}

// account adds a step the hardware model ran (nil: the toy model) to the
// energy the simulated GPUs draw: its power above idle over its wall time.
func (s *scheduler) account(p *simhw.Point, stepS float64) {
	if p == nil {
		return
	}
	wallS := stepS / s.cfg.Speed
	s.mu.Lock()
	s.st.hw.energyJ += (p.PowerW - s.cfg.HW.GPU.IdleW) * wallS
	s.st.hw.busyS += wallS
	s.st.hw.clockMHz, s.st.hw.capped = p.ClockMHz, p.PowerCapped
	s.mu.Unlock()
}

// stepSeconds is the modelled duration (at Speed 1) of one scheduler step
// that decodes one token for each of decoding sequences and prefills
// prefillTok prompt tokens, after finished requests.
func (c Config) stepSeconds(decoding, prefillTok int, finished int64) float64 {
	drift := 1 + c.DriftPerRequest*float64(finished)
	return (c.StepBaseS+c.StepPerSeqS*float64(decoding))*drift + float64(prefillTok)/c.PrefillTokPerS
}

// slowedStepSeconds is stepSeconds under the GPU's settings: the decode
// part slowed by the decode factor, the prefill part by the prefill one.
func (c Config) slowedStepSeconds(g GPU, decoding, prefilling, prefillTok int, finished int64) float64 {
	fd, fp := g.Slowdown(decoding, prefilling, c.Slots)
	prefillS := float64(prefillTok) / c.PrefillTokPerS
	return (c.stepSeconds(decoding, prefillTok, finished)-prefillS)*fd + prefillS*fp
}
