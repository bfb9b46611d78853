package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// DefaultInterval is used when NewSampler is given a non-positive interval.
const DefaultInterval = time.Second

// RefusedRun is how many readings of a device, refused in a row with none
// ever accepted, end sampling: a source whose every reading is refused
// (NaN, 10^9 W) gives the run no energy, and the run fails at once rather
// than at its end.
const RefusedRun = 5

// Sampler reads a Source on a ticker and on demand, stamps each reading with
// the run clock and hands the rows to a sink.
//
// A reading power.csv must not hold (power or energy not a finite number
// ≥ 0, a time not after the device's previous sample, power above
// RefuseLimitFactor × the device's limit) is refused: never written, so it
// counts as a gap in the audit, and reported by Anomalies. A device whose
// first RefusedRun readings are all refused ends sampling with an error
// naming them (fatal, as below). A reading above
// FlagLimitFactor × the limit, or a device reading 0 W ZeroRun times in a
// row, is kept and reported. The first of each kind per device is logged.
//
// Samples are taken one at a time (the ticker and SampleNow never overlap),
// so the sink is never called concurrently and timestamps follow the clock.
// A Read or sink error is fatal: sampling ends, the error is kept (Stop and
// SampleNow return it) and sent once on Err(). Rows already handed to the
// sink stay there.
type Sampler struct {
	src      Source
	interval time.Duration
	clock    Clock
	sink     func([]record.PowerSample) error
	logf     func(string)
	// valid refuses readings power.csv must not hold and flags
	// implausible ones.
	valid *validator

	// sampleMu serialises Read + sink between the ticker and SampleNow.
	sampleMu sync.Mutex

	mu      sync.Mutex
	latest  map[string]record.PowerSample
	order   []string
	err     error
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}

	errCh chan error
	// stopWait is StopWait (tests shorten it).
	stopWait time.Duration
}

// NewSampler returns a sampler of src at interval (sub-second allowed;
// non-positive means DefaultInterval). clock stamps the samples (nil means
// WallClock); sink receives the rows of each sample, one per device; logf,
// when not nil, gets one line per notable event (fatal error).
func NewSampler(src Source, interval time.Duration, clock Clock, sink func([]record.PowerSample) error, logf func(string)) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if clock == nil {
		clock = WallClock
	}
	if sink == nil {
		sink = func([]record.PowerSample) error { return nil }
	}
	return &Sampler{
		src:      src,
		interval: interval,
		clock:    clock,
		sink:     sink,
		logf:     logf,
		valid:    newValidator(src.Name(), logf),
		latest:   map[string]record.PowerSample{},
		errCh:    make(chan error, 1),
		stopWait: StopWait,
	}
}

// SetDevices gives the sampler the devices of its source, for the power
// limits that bound a plausible reading (call it before Start).
func (s *Sampler) SetDevices(devs []record.Device) { s.valid.setDevices(devs) }

// Anomalies lists the readings the sampler refused or flagged, one entry
// per device and kind (AnomalyPowerInvalid, AnomalyPowerAboveLimit,
// AnomalyPowerZero) with the count and the first instance in Detail.
func (s *Sampler) Anomalies() []Anomaly { return s.valid.anomalies() }

var _ AnomalyReporter = (*Sampler)(nil)

// Interval returns the ticker interval.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Start launches the sampling goroutine: one sample per tick until ctx is
// done, Stop is called or a fatal error occurs. The first tick comes one
// interval after Start; call SampleNow for a sample at the start instant.
// Calling Start again does nothing.
func (s *Sampler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx, s.done)
}

func (s *Sampler) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.sample(ctx); err != nil {
				// Fatal errors are recorded by sample; a cancelled
				// context is the normal end.
				return
			}
		}
	}
}

// SampleNow takes one sample at once (stage boundaries), independent of the
// ticker. It may be called before Start and after Stop. After a fatal error
// it returns that error without reading.
func (s *Sampler) SampleNow(ctx context.Context) error {
	return s.sample(ctx)
}

// sample reads, stamps and sinks one sample. A failure that is not caused by
// ctx being done is recorded as the fatal error.
func (s *Sampler) sample(ctx context.Context) error {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	if err := s.firstErr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	readings, err := s.src.Read(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.fail(fmt.Errorf("telemetry %s: read: %w", s.src.Name(), err))
	}
	if len(readings) == 0 {
		return nil
	}
	rows := s.valid.filter(ToSamples(s.clock(), readings))
	if len(rows) > 0 {
		if err := s.sink(rows); err != nil {
			return s.fail(fmt.Errorf("telemetry %s: write samples: %w", s.src.Name(), err))
		}
		s.mu.Lock()
		for _, r := range rows {
			if _, ok := s.latest[r.Device]; !ok {
				s.order = append(s.order, r.Device)
			}
			s.latest[r.Device] = r
		}
		s.mu.Unlock()
	}
	if why := s.valid.unusable(); why != "" {
		return s.fail(fmt.Errorf("telemetry %s: %s", s.src.Name(), why))
	}
	return nil
}

func (s *Sampler) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// fail records err as the fatal error if it is the first, and returns the
// fatal error.
func (s *Sampler) fail(err error) error {
	s.mu.Lock()
	first := s.err == nil
	if first {
		s.err = err
	}
	err = s.err
	s.mu.Unlock()
	if first {
		s.errCh <- err // buffered 1, sent exactly once
		if s.logf != nil {
			s.logf("sampling stopped: " + err.Error())
		}
	}
	return err
}

// Latest returns a copy of the last sample of each device, in the order the
// devices first appeared.
func (s *Sampler) Latest() []record.PowerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]record.PowerSample, 0, len(s.order))
	for _, d := range s.order {
		out = append(out, s.latest[d])
	}
	return out
}

// StopWait bounds how long Stop waits for a sample in progress once its
// context is cancelled: a source whose Read ignores its context must not
// hang the run.
const StopWait = 10 * time.Second

// Stop ends the sampling goroutine and waits for it (at most StopWait
// after cancelling its context). It returns the first fatal error seen,
// nil if none. It is safe to call more than once.
func (s *Sampler) Stop() error {
	s.mu.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		t := time.NewTimer(s.stopWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			return s.fail(fmt.Errorf("telemetry %s: stop: a read did not return within %s of its cancellation", s.src.Name(), s.stopWait))
		}
	}
	return s.firstErr()
}

// Err receives the first fatal error (once; the channel is never closed).
func (s *Sampler) Err() <-chan error { return s.errCh }

// ErrStopped is what a Source may return from Read after Close.
var ErrStopped = errors.New("telemetry: source closed")
