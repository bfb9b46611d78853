package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// fakeSource returns two devices; read number failAt (1-based) and later
// fail with errRead.
type fakeSource struct {
	reads  atomic.Int64
	failAt int64
	withT  float64
}

var errRead = errors.New("gpu fell off the bus")

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "g0"}, {ID: "g1"}}, nil
}
func (f *fakeSource) Read(context.Context) ([]Reading, error) {
	n := f.reads.Add(1)
	if f.failAt > 0 && n >= f.failAt {
		return nil, errRead
	}
	return []Reading{
		{Device: "g0", PowerW: 100 + float64(n), EnergyJ: 10 * float64(n), HasEnergy: true, MemUsedBytes: 1 << 30, T: f.withT},
		{Device: "g1", PowerW: 200 + float64(n), MemUsedBytes: -1, T: f.withT},
	}, nil
}
func (f *fakeSource) Close() error { return nil }

// stepClock returns 1000, 1000.5, 1001, ... on successive calls.
func stepClock() Clock {
	var mu sync.Mutex
	t := 999.5
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		t += 0.5
		return t
	}
}

// collector is a sink that records batches and signals each one.
type collector struct {
	mu      sync.Mutex
	batches [][]record.PowerSample
	got     chan struct{}
	failAt  int // 1-based call that fails, 0 never
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 1000)} }

var errSink = errors.New("disk full")

func (c *collector) sink(rows []record.PowerSample) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAt > 0 && len(c.batches)+1 >= c.failAt {
		return errSink
	}
	c.batches = append(c.batches, append([]record.PowerSample(nil), rows...))
	c.got <- struct{}{}
	return nil
}

func (c *collector) snapshot() [][]record.PowerSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]record.PowerSample(nil), c.batches...)
}

func waitN(t *testing.T, c *collector, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("only %d of %d samples arrived", i, n)
		}
	}
}

func TestSamplerTicksStampWithClock(t *testing.T) {
	src := &fakeSource{}
	c := newCollector()
	s := NewSampler(src, 5*time.Millisecond, stepClock(), c.sink, nil)
	s.Start(context.Background())
	waitN(t, c, 3)
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	b := c.snapshot()
	if len(b) < 3 {
		t.Fatalf("got %d batches", len(b))
	}
	for i, rows := range b {
		want := 1000 + 0.5*float64(i) // one clock call per sample
		if len(rows) != 2 {
			t.Fatalf("batch %d has %d rows", i, len(rows))
		}
		for _, r := range rows {
			if r.T != want {
				t.Errorf("batch %d: T = %v, want %v", i, r.T, want)
			}
		}
		if rows[0].Device != "g0" || !rows[0].HasEnergy || rows[0].MemUsedBytes != 1<<30 {
			t.Errorf("batch %d row 0 = %+v", i, rows[0])
		}
		if rows[1].Device != "g1" || rows[1].HasEnergy || rows[1].MemUsedBytes != -1 {
			t.Errorf("batch %d row 1 = %+v", i, rows[1])
		}
	}
	// Stop waited for the loop: every read was sunk, and none follows.
	n := len(c.snapshot())
	if r := src.reads.Load(); r != int64(n) {
		t.Errorf("%d reads, %d samples sunk: a tick outlived Stop", r, n)
	}
}

func TestSampleNowAndLatest(t *testing.T) {
	src := &fakeSource{}
	c := newCollector()
	s := NewSampler(src, time.Hour, stepClock(), c.sink, nil)
	if got := s.Latest(); len(got) != 0 {
		t.Fatalf("Latest before any sample = %v", got)
	}
	// Before Start, after Start and after Stop.
	ctx := context.Background()
	if err := s.SampleNow(ctx); err != nil {
		t.Fatal(err)
	}
	s.Start(ctx)
	if err := s.SampleNow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.SampleNow(ctx); err != nil {
		t.Fatal(err)
	}
	b := c.snapshot()
	if len(b) != 3 {
		t.Fatalf("got %d samples, want 3 (hour ticker never fired)", len(b))
	}
	if b[0][0].T != 1000 || b[1][0].T != 1000.5 || b[2][0].T != 1001 {
		t.Errorf("timestamps %v %v %v", b[0][0].T, b[1][0].T, b[2][0].T)
	}
	latest := s.Latest()
	if len(latest) != 2 || latest[0].Device != "g0" || latest[1].Device != "g1" {
		t.Fatalf("Latest = %+v", latest)
	}
	if latest[0].PowerW != 103 || latest[0].T != 1001 {
		t.Errorf("Latest g0 = %+v, want the third read", latest[0])
	}
	latest[0].PowerW = -1 // a copy: must not change the sampler
	if s.Latest()[0].PowerW != 103 {
		t.Error("Latest returned shared memory")
	}
}

func TestSourceTimestampWins(t *testing.T) {
	src := &fakeSource{withT: 42.25}
	c := newCollector()
	s := NewSampler(src, time.Hour, stepClock(), c.sink, nil)
	if err := s.SampleNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.snapshot()[0][0].T; got != 42.25 {
		t.Errorf("T = %v, want the reading's own 42.25", got)
	}
}

func TestReadErrorEndsSampling(t *testing.T) {
	src := &fakeSource{failAt: 3}
	c := newCollector()
	var logged atomic.Value
	s := NewSampler(src, 2*time.Millisecond, stepClock(), c.sink, func(l string) { logged.Store(l) })
	s.Start(context.Background())
	var got error
	select {
	case got = <-s.Err():
	case <-time.After(20 * time.Second):
		t.Fatal("no error on Err()")
	}
	if !errors.Is(got, errRead) {
		t.Fatalf("Err() = %v, want the read error", got)
	}
	if err := s.Stop(); !errors.Is(err, errRead) {
		t.Errorf("Stop = %v, want the read error", err)
	}
	// The loop has ended (Stop waited for it): the failing read was the last.
	if r := src.reads.Load(); r != 3 {
		t.Errorf("%d reads, want 3: the sampler kept reading after a fatal error", r)
	}
	if err := s.Stop(); !errors.Is(err, errRead) {
		t.Errorf("second Stop = %v", err)
	}
	if err := s.SampleNow(context.Background()); !errors.Is(err, errRead) {
		t.Errorf("SampleNow after failure = %v", err)
	}
	if n := len(c.snapshot()); n != 2 {
		t.Errorf("kept %d samples, want the 2 read before the failure", n)
	}
	if l, _ := logged.Load().(string); l == "" {
		t.Error("fatal error not logged")
	}
	select {
	case e := <-s.Err():
		t.Errorf("second error on Err(): %v", e)
	default:
	}
}

func TestSinkErrorEndsSampling(t *testing.T) {
	src := &fakeSource{}
	c := newCollector()
	c.failAt = 2
	s := NewSampler(src, 2*time.Millisecond, stepClock(), c.sink, nil)
	s.Start(context.Background())
	select {
	case err := <-s.Err():
		if !errors.Is(err, errSink) {
			t.Fatalf("Err() = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no error on Err()")
	}
	if err := s.Stop(); !errors.Is(err, errSink) {
		t.Errorf("Stop = %v", err)
	}
	// The loop has ended: the read whose sink failed was the last.
	if r := src.reads.Load(); r != 2 {
		t.Errorf("%d reads, want 2: the sampler kept reading after a sink error", r)
	}
	if len(c.snapshot()) != 1 || len(s.Latest()) != 2 || s.Latest()[0].PowerW != 101 {
		t.Errorf("latest = %+v; want the first (sunk) sample only", s.Latest())
	}
}

func TestSampleNowSinkErrorIsFatal(t *testing.T) {
	c := newCollector()
	c.failAt = 1
	s := NewSampler(&fakeSource{}, time.Hour, stepClock(), c.sink, nil)
	if err := s.SampleNow(context.Background()); !errors.Is(err, errSink) {
		t.Fatalf("SampleNow = %v", err)
	}
	if err := <-s.Err(); !errors.Is(err, errSink) {
		t.Fatalf("Err() = %v", err)
	}
	if err := s.Stop(); !errors.Is(err, errSink) {
		t.Fatalf("Stop = %v", err)
	}
}

func TestCancelledContextIsNotFatal(t *testing.T) {
	c := newCollector()
	s := NewSampler(&fakeSource{}, time.Hour, stepClock(), c.sink, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SampleNow(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("SampleNow(cancelled) = %v", err)
	}
	if err := s.SampleNow(context.Background()); err != nil {
		t.Fatalf("SampleNow after a cancelled one = %v", err)
	}
	s.Start(ctx) // cancelled parent: the loop ends at once
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop = %v", err)
	}
}

func TestStopWithoutStart(t *testing.T) {
	s := NewSampler(&fakeSource{}, 0, nil, nil, nil)
	if s.Interval() != DefaultInterval {
		t.Errorf("interval = %v", s.Interval())
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background()) // after Stop: does nothing
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestNoneSource(t *testing.T) {
	var src Source = NewNone()
	if src.Name() != "none" {
		t.Errorf("Name = %q", src.Name())
	}
	devs, err := src.Devices(context.Background())
	if err != nil || len(devs) != 0 {
		t.Errorf("Devices = %v, %v", devs, err)
	}
	called := false
	s := NewSampler(src, time.Millisecond, nil, func([]record.PowerSample) error { called = true; return nil }, nil)
	if err := s.SampleNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if called || len(s.Latest()) != 0 {
		t.Error("none source produced samples")
	}
	if err := src.Close(); err != nil {
		t.Error(err)
	}
}

func TestToSamples(t *testing.T) {
	rows := ToSamples(5, []Reading{{Device: "a", PowerW: 1, MemUsedBytes: -1}, {Device: "b", T: 4}})
	if rows[0].T != 5 || rows[1].T != 4 || rows[0].MemUsedBytes != -1 {
		t.Errorf("rows = %+v", rows)
	}
}

// hangingSource's Read ignores its context and never returns until
// released (a driver call stuck in the kernel).
type hangingSource struct {
	entered chan struct{}
	release chan struct{}
}

func (h *hangingSource) Name() string                                     { return "hanging" }
func (h *hangingSource) Devices(context.Context) ([]record.Device, error) { return nil, nil }
func (h *hangingSource) Close() error                                     { return nil }
func (h *hangingSource) Read(context.Context) ([]Reading, error) {
	h.entered <- struct{}{}
	<-h.release
	return nil, nil
}

// Stop does not hang on a Read that ignores its context: it gives up after
// stopWait and says so.
func TestStopBoundedWithHangingRead(t *testing.T) {
	h := &hangingSource{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(h.release)
	s := NewSampler(h, time.Millisecond, stepClock(), nil, nil)
	s.stopWait = 20 * time.Millisecond
	s.Start(context.Background())
	<-h.entered
	err := s.Stop()
	if err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Fatalf("Stop = %v, want the hanging read reported", err)
	}
	select {
	case e := <-s.Err():
		if e.Error() != err.Error() {
			t.Errorf("Err() = %v, want %v", e, err)
		}
	default:
		t.Error("the hanging read is not reported on Err()")
	}
}
