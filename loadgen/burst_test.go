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

// burstServer is a fake Preparer and Tracker for the bursts of every
// shape. Each request notes how many requests had said they were written
// when it started, and when it started. The first `barrier` requests come
// in groups of BurstWave that say they were written only once their whole
// group has started (so a burst released all together, or in smaller
// waves, shows in wroteAt); every later request says it at once. A request
// is answered once `answerAfter` requests have started (or its ctx ends),
// so the first fill of a concurrency stage is in flight together.
type burstServer struct {
	barrier, answerAfter int

	mu       sync.Mutex
	start    time.Time
	order    []string
	wroteAt  []int
	at       []time.Duration
	wrote    int
	inflight int
	maxIn    int
	groups   map[int]chan struct{}
	arrived  map[int]int
	answer   chan struct{}
	answered bool
}

func newBurstServer(barrier, answerAfter int) *burstServer {
	return &burstServer{barrier: barrier, answerAfter: answerAfter, start: time.Now(),
		groups: map[int]chan struct{}{}, arrived: map[int]int{}, answer: make(chan struct{})}
}

func (s *burstServer) Prepare(context.Context, []workload.Request) func() { return nil }

func (s *burstServer) Do(ctx context.Context, r workload.Request) record.Request {
	return s.DoFlight(ctx, r, &Flight{})
}

func (s *burstServer) DoFlight(ctx context.Context, r workload.Request, f *Flight) record.Request {
	s.mu.Lock()
	i := len(s.order)
	s.order = append(s.order, r.ID)
	s.wroteAt = append(s.wroteAt, s.wrote)
	s.at = append(s.at, time.Since(s.start))
	s.inflight++
	s.maxIn = max(s.maxIn, s.inflight)
	var group chan struct{}
	if i < s.barrier {
		g := i / BurstWave
		if s.groups[g] == nil {
			s.groups[g] = make(chan struct{})
		}
		group = s.groups[g]
		if s.arrived[g]++; s.arrived[g] == BurstWave {
			close(group)
		}
	}
	if len(s.order) >= s.answerAfter && !s.answered {
		s.answered = true
		close(s.answer)
	}
	s.mu.Unlock()
	if group != nil {
		select {
		case <-group:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	s.wrote++
	s.mu.Unlock()
	f.Wrote()
	rec := record.Request{ID: r.ID, OK: true, OutputTokens: 1}
	select {
	case <-s.answer:
	case <-ctx.Done():
		rec.OK, rec.Error = false, "cancelled"
	}
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
	return rec
}

// runBounded runs cfg against s and fails the test instead of hanging
// when a wave waits for what never comes.
func runBounded(t *testing.T, cfg Config, n int, s *burstServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := &collector{t: t}
	w := waves{size: BurstWave, pause: BurstWavePause, maxWait: time.Hour}
	if err := run(ctx, cfg, requests(n), s, c.sink, c.progress, w); err != nil {
		t.Fatalf("%v (%d of %d started)", err, len(s.order), n)
	}
	if p := c.last(); p.Done != n || p.Failed != 0 {
		t.Fatalf("progress %+v, want %d done, none failed", p, n)
	}
}

// checkWaves: request i of the first `burst` started only once every
// request of the waves of BurstWave before it had said it was written:
// wroteAt[i] is exactly (i / BurstWave) · BurstWave (no wave can say it
// before all of it started). Released all together, or one request at a
// time, a request of wave 1 starts before wave 0 was written.
func checkWaves(t *testing.T, s *burstServer, burst int) {
	t.Helper()
	for i := 0; i < burst; i++ {
		if want := i / BurstWave * BurstWave; s.wroteAt[i] != want {
			t.Errorf("%s (burst request %d) started after %d were written, want %d: not sent in waves", s.order[i], i, s.wroteAt[i], want)
		}
	}
}

// TestConcurrencyFirstFillInWaves: the first fill of a concurrency stage
// (and of unlimited capped in flight) goes in waves like the unlimited
// burst; then the stage keeps its number in flight.
func TestConcurrencyFirstFillInWaves(t *testing.T) {
	const fill, n = 3 * BurstWave, 5 * BurstWave
	for _, cfg := range []Config{{Mode: Concurrency, Concurrency: fill}, {Mode: Unlimited, MaxConcurrency: fill}} {
		s := newBurstServer(fill, fill)
		runBounded(t, cfg, n, s)
		checkWaves(t, s, fill)
		if s.maxIn != fill {
			t.Errorf("%+v: at most %d in flight, want %d", cfg, s.maxIn, fill)
		}
	}
}

// TestScheduledClusterInWaves: requests of an open mode that are due
// together (a gamma cluster) go in waves; each goes no earlier than its
// time.
func TestScheduledClusterInWaves(t *testing.T) {
	const cluster = 2 * BurstWave
	offsets := make([]time.Duration, cluster+1+BurstWave)
	for i := cluster; i < len(offsets); i++ {
		offsets[i] = 60 * time.Millisecond
	}
	offsets[cluster] = 30 * time.Millisecond
	s := newBurstServer(cluster, len(offsets))
	r := newRunner(context.Background(), s, len(offsets))
	s.start = time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.sendPaced(requests(len(offsets)), nil, offsets, waves{size: BurstWave, pause: BurstWavePause, maxWait: time.Hour})
		r.wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the cluster was not all sent (%d of %d started)", len(s.order), len(offsets))
	}
	checkWaves(t, s, cluster)
	for i, id := range s.order {
		k, err := strconv.Atoi(id[1:]) // "r%03d"
		if err != nil {
			t.Fatal(err)
		}
		if s.at[i] < offsets[k] {
			t.Errorf("%s started at %v, before its time %v", id, s.at[i], offsets[k])
		}
	}
}

// TestOpenModesCapInFlight: max_concurrency caps every open mode, whether
// the client gets its sends in waves or not.
func TestOpenModesCapInFlight(t *testing.T) {
	for _, cfg := range []Config{
		{Mode: Constant, Rate: 1e6, MaxConcurrency: 5},
		{Mode: Gamma, Rate: 1e6, Burstiness: 0.3, MaxConcurrency: 5, Seed: 2},
		{Mode: Ramp, RampStartRate: 1e5, RampEndRate: 1e6, MaxConcurrency: 5},
	} {
		s := newBurstServer(0, 5) // answered once 5 are in flight
		runBounded(t, cfg, 40, s)
		if s.maxIn != 5 {
			t.Errorf("%s with waves: at most %d in flight, want 5", cfg.Mode, s.maxIn)
		}
		f := newFake(false)
		if err := Run(context.Background(), cfg, requests(40), f, nil, nil); err != nil {
			t.Fatal(err)
		}
		if m := f.maxInflight.Load(); m > 5 {
			t.Errorf("%s: %d in flight, want at most 5", cfg.Mode, m)
		}
	}
}
