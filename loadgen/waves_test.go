package loadgen

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// waveServer is a fake Preparer and Tracker for the burst's waves. Each
// request notes how many requests had said they were written when it
// started; then, when barrier is set, it waits until its whole wave (of
// barrier requests) has started, so that a release one request at a time
// would never finish; then it says it was written unless silent; then it
// waits for answer (the server's response) or ctx.
type waveServer struct {
	barrier int
	silent  bool
	answer  chan struct{}
	cancel  context.CancelFunc // called by the first request, when set

	mu       sync.Mutex
	order    []string // ids in the order they started
	wroteAt  []int    // Wrote calls before each start, in that order
	doneAt   []int    // requests finished before each start
	wrote    int
	finished int
	arrived  map[int]int // wave -> requests of it started
	waveDone map[int]chan struct{}
	all      chan struct{} // closed when every request expected started
	expected int
}

func newWaveServer(expected, barrier int) *waveServer {
	return &waveServer{barrier: barrier, answer: make(chan struct{}), arrived: map[int]int{},
		waveDone: map[int]chan struct{}{}, all: make(chan struct{}), expected: expected}
}

func (s *waveServer) Prepare(context.Context, []workload.Request) func() { return nil }

func (s *waveServer) Do(ctx context.Context, r workload.Request) record.Request {
	return s.DoFlight(ctx, r, nil)
}

func (s *waveServer) DoFlight(ctx context.Context, r workload.Request, f *Flight) record.Request {
	s.mu.Lock()
	i := len(s.order)
	s.order = append(s.order, r.ID)
	s.wroteAt = append(s.wroteAt, s.wrote)
	s.doneAt = append(s.doneAt, s.finished)
	if len(s.order) == s.expected {
		close(s.all)
	}
	var wave chan struct{}
	if s.barrier > 0 {
		w := i / s.barrier
		if s.waveDone[w] == nil {
			s.waveDone[w] = make(chan struct{})
		}
		wave = s.waveDone[w]
		if s.arrived[w]++; s.arrived[w] == s.barrier || len(s.order) == s.expected {
			close(wave)
		}
	}
	s.mu.Unlock()
	if i == 0 && s.cancel != nil {
		s.cancel()
	}
	if wave != nil {
		select {
		case <-wave:
		case <-ctx.Done():
		}
	}
	if !s.silent {
		s.mu.Lock()
		s.wrote++
		s.mu.Unlock()
		f.Wrote()
	}
	rec := record.Request{ID: r.ID, OK: true, OutputTokens: 1}
	select {
	case <-s.answer:
	case <-ctx.Done():
		rec.OK, rec.Error = false, "cancelled"
	}
	s.mu.Lock()
	s.finished++
	s.mu.Unlock()
	return rec
}

// answerWhenAllStarted lets every request finish once all expected ones
// started; a release that waited for responses never gets there, and the
// test fails instead of hanging.
func (s *waveServer) answerWhenAllStarted(t *testing.T) {
	t.Helper()
	select {
	case <-s.all:
	case <-time.After(20 * time.Second):
		s.mu.Lock()
		t.Errorf("%d of %d requests started (waves waiting for responses, or released one at a time?)", len(s.order), s.expected)
		s.mu.Unlock()
	}
	close(s.answer)
}

// TestUnlimitedSendsInWaves: a Preparer that is a Tracker gets the burst
// in waves of BurstWave, in order; each wave starts together, only after
// every request of the waves before it said it was written, and never
// waits for a response.
func TestUnlimitedSendsInWaves(t *testing.T) {
	const n = 3*BurstWave + 5 // three full waves and a short one
	s := newWaveServer(n, BurstWave)
	go s.answerWhenAllStarted(t)
	c := &collector{t: t}
	// Run's waves, but no wave let go for taking long to be written: the
	// test checks that none is let go before.
	w := waves{size: BurstWave, pause: BurstWavePause, maxWait: time.Hour}
	if err := run(context.Background(), Config{Mode: Unlimited}, requests(n), s, c.sink, c.progress, w); err != nil {
		t.Fatal(err)
	}
	if p := c.last(); p.Sent != n || p.Done != n || p.Failed != 0 {
		t.Fatalf("progress %+v", p)
	}
	for i, id := range s.order {
		wave := i / BurstWave
		// Requests start in order at wave granularity: a wave's ids in
		// any order within it.
		k, err := strconv.Atoi(id[1:])
		if err != nil {
			t.Fatal(err)
		}
		if k/BurstWave != wave {
			t.Errorf("%s started as request %d, in wave %d; want wave %d", id, i, wave, k/BurstWave)
		}
		// Every request of the waves before had said it was written, and
		// none of its own wave could have before all of it started.
		if got, want := s.wroteAt[i], wave*BurstWave; got != want {
			t.Errorf("%s (wave %d) started after %d requests were written, want %d", id, wave, got, want)
		}
	}
}

// TestWavesWithoutWroteSignal: a Doer that never says a request was
// written gets the next wave when the wave's requests finish, or, when
// they wait for a response, after the wave's longest wait.
func TestWavesWithoutWroteSignal(t *testing.T) {
	const size, n = 4, 10
	for _, answered := range []bool{true, false} {
		barrier := 0
		if answered {
			barrier = size // a wave finishes only once all of it started
		}
		s := newWaveServer(n, barrier)
		s.silent = true
		if answered {
			close(s.answer) // requests finish at once
		} else {
			go s.answerWhenAllStarted(t)
		}
		maxWait := time.Hour // finishing must release the next wave
		if !answered {
			maxWait = time.Millisecond
		}
		r := newRunner(context.Background(), s, n)
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			r.sendPaced(requests(n), nil, nil, waves{size: size, maxWait: maxWait})
			r.wg.Wait()
		}()
		select {
		case <-sent:
		case <-time.After(20 * time.Second):
			t.Fatalf("answered %v: the waves were not all released", answered)
		}
		if len(r.done) != n {
			t.Errorf("answered %v: %d finished, want %d", answered, len(r.done), n)
		}
		if answered {
			// Finishing counts as written: each wave started once every
			// request of the waves before had finished.
			for i, got := range s.doneAt {
				if want := i / size * size; got != want {
					t.Errorf("request %d started after %d finished, want %d", i, got, want)
				}
			}
		}
	}
}

// TestWavesStopWhenCancelled: requests of the waves after a cancellation
// are not sent (nor recorded).
func TestWavesStopWhenCancelled(t *testing.T) {
	const size, n = 4, 12
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newWaveServer(n, 0)
	s.cancel = cancel
	r := newRunner(ctx, s, n)
	r.sendPaced(requests(n), nil, nil, waves{size: size, maxWait: time.Hour})
	r.wg.Wait()
	if got := r.sentN.Load(); got != size {
		t.Errorf("%d sent, want the first wave's %d", got, size)
	}
	if len(r.done) != size {
		t.Errorf("%d recorded, want %d", len(r.done), size)
	}
}

func newRunner(ctx context.Context, d Doer, n int) *runner {
	r := &runner{ctx: ctx, d: d, flights: map[*Flight]struct{}{}, done: make(chan record.Request, n), sent: make(chan struct{}, 1)}
	r.tracker, _ = d.(Tracker)
	return r
}
