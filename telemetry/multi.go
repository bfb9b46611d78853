package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Multi reads several sources side by side (--telemetry sim --telemetry
// rapl): its devices are theirs in the order given. Each source is read in
// its own goroutine, one read at a time per source, and a reading without
// its own time is stamped when its source's read returned, so a slow
// source (a BMC answering in a second) neither delays the others'
// timestamps nor holds up their sampling: Read waits at most Wait for the
// reads it started, returns what has arrived, and a read still running
// delivers its readings to a later Read. Device IDs must be unique across
// the sources. A read error of any source is a Read's error (the sampler
// ends, as with one source). The optional abilities (anomalies,
// throttling, the driver version) are those of the sources that have them.
type Multi struct {
	srcs  []Source
	clock Clock
	// Wait bounds how long Read waits for the sources' reads.
	Wait time.Duration

	ctx    context.Context // the reads' context, cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight []bool
	done     chan result
}

// result is one source's finished read.
type result struct {
	i   int
	rs  []Reading
	err error
}

// DefaultMultiWait is Multi.Wait unless set: a local source (NVML, RAPL,
// the simulator) answers well within it.
const DefaultMultiWait = 100 * time.Millisecond

var (
	_ Source           = (*Multi)(nil)
	_ AnomalyReporter  = (*Multi)(nil)
	_ ThrottleReporter = (*Multi)(nil)
	_ DriverReporter   = (*Multi)(nil)
)

// NewMulti combines sources; clock stamps readings without their own time
// (nil: WallClock). With one source, use it directly.
func NewMulti(clock Clock, srcs ...Source) *Multi {
	if clock == nil {
		clock = WallClock
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Multi{srcs: srcs, clock: clock, Wait: DefaultMultiWait, ctx: ctx, cancel: cancel,
		inflight: make([]bool, len(srcs)), done: make(chan result, len(srcs))}
}

// Sources returns the combined sources.
func (m *Multi) Sources() []Source { return m.srcs }

// Name is the sources' names joined by "+", e.g. "sim+rapl".
func (m *Multi) Name() string {
	names := make([]string, len(m.srcs))
	for i, s := range m.srcs {
		names[i] = s.Name()
	}
	return strings.Join(names, "+")
}

// Devices lists every source's devices; two devices with one ID are an
// error naming both sources.
func (m *Multi) Devices(ctx context.Context) ([]record.Device, error) {
	var out []record.Device
	owner := map[string]string{}
	for _, s := range m.srcs {
		devs, err := s.Devices(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry %s: %w", s.Name(), err)
		}
		for _, d := range devs {
			if o, dup := owner[d.ID]; dup {
				return nil, fmt.Errorf("telemetry: device %s is named by both %s and %s: device IDs must be unique across sources", d.ID, o, s.Name())
			}
			owner[d.ID] = s.Name()
		}
		out = append(out, devs...)
	}
	return out, nil
}

// Read starts a read of every source not still reading, waits until all
// running reads are done or Wait has passed (or ctx is done), and returns
// the readings that arrived, in the sources' order.
func (m *Multi) Read(ctx context.Context) ([]Reading, error) {
	m.mu.Lock()
	running := 0
	for i, s := range m.srcs {
		if m.inflight[i] {
			running++
			continue
		}
		m.inflight[i] = true
		running++
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			rs, err := s.Read(m.ctx)
			t := m.clock()
			for k := range rs {
				if rs[k].T == 0 {
					rs[k].T = t
				}
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", s.Name(), err)
			}
			m.done <- result{i: i, rs: rs, err: err}
		}()
	}
	m.mu.Unlock()
	wait := m.Wait
	if wait <= 0 {
		wait = DefaultMultiWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	got := make([][]Reading, len(m.srcs))
	var errs []error
	collect := func(r result) {
		m.mu.Lock()
		m.inflight[r.i] = false
		m.mu.Unlock()
		got[r.i] = append(got[r.i], r.rs...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
		running--
	}
wait:
	for running > 0 {
		select {
		case r := <-m.done:
			collect(r)
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Reading
	for _, rs := range got {
		out = append(out, rs...)
	}
	return out, nil
}

// Close stops the reads still running (waiting at most StopWait for
// them), closes every source and returns their errors joined.
func (m *Multi) Close() error {
	m.cancel()
	finished := make(chan struct{})
	go func() { m.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(StopWait):
	}
	var errs []error
	for _, s := range m.srcs {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Anomalies concatenates the anomalies of the sources that report them.
func (m *Multi) Anomalies() []Anomaly {
	var out []Anomaly
	for _, s := range m.srcs {
		if ar, ok := s.(AnomalyReporter); ok {
			out = append(out, ar.Anomalies()...)
		}
	}
	return out
}

// Throttled is true when any source that can tell saw throttling; the
// reasons are joined.
func (m *Multi) Throttled() (bool, string) {
	any := false
	var why []string
	for _, s := range m.srcs {
		if tr, ok := s.(ThrottleReporter); ok {
			if t, r := tr.Throttled(); t {
				any = true
				why = append(why, r)
			}
		}
	}
	return any, strings.Join(why, "; ")
}

// Driver is the first driver version a source knows.
func (m *Multi) Driver() string {
	for _, s := range m.srcs {
		if dr, ok := s.(DriverReporter); ok {
			if v := dr.Driver(); v != "" {
				return v
			}
		}
	}
	return ""
}
