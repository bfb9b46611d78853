package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// AnomalyReadFailed: a read of a source that tolerates failures (a BMC
// over the network) failed; its devices have no sample for that instant,
// which the power audit sees as a gap.
const AnomalyReadFailed = "power_read_failed"

// Tolerant wraps a source whose reads may fail now and then (Redfish,
// IPMI over the LAN): a failed read gives no readings and an anomaly
// instead of ending the sampling, until MaxFailures reads in a row have
// failed; then the error is returned (fatal, as any source's). A run with
// such gaps is judged by the power audit, not silently interpolated.
type Tolerant struct {
	Source
	// MaxFailures is how many reads in a row may fail.
	MaxFailures int
	clock       Clock

	mu        sync.Mutex
	streak    int
	anomalies []Anomaly
}

var _ AnomalyReporter = (*Tolerant)(nil)

// NewTolerant wraps src; clock stamps the anomalies (nil: WallClock).
func NewTolerant(src Source, maxFailures int, clock Clock) *Tolerant {
	if clock == nil {
		clock = WallClock
	}
	return &Tolerant{Source: src, MaxFailures: maxFailures, clock: clock}
}

// Read reads the source; a failure within MaxFailures in a row is
// recorded and gives no readings.
func (t *Tolerant) Read(ctx context.Context) ([]Reading, error) {
	rs, err := t.Source.Read(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		t.streak = 0
		return rs, nil
	}
	if ctx.Err() != nil || errors.Is(err, ErrStopped) {
		return nil, err
	}
	t.streak++
	if t.streak > t.MaxFailures {
		return nil, fmt.Errorf("%d reads in a row failed, the last: %w", t.streak, err)
	}
	t.anomalies = append(t.anomalies, Anomaly{T: t.clock(), Kind: AnomalyReadFailed,
		Detail: fmt.Sprintf("telemetry %s: read failed (%d in a row, at most %d tolerated; no sample for this instant): %v", t.Name(), t.streak, t.MaxFailures, err)})
	return nil, nil
}

// Anomalies are the failed reads, then the source's own.
func (t *Tolerant) Anomalies() []Anomaly {
	t.mu.Lock()
	out := append([]Anomaly(nil), t.anomalies...)
	t.mu.Unlock()
	if ar, ok := t.Source.(AnomalyReporter); ok {
		out = append(out, ar.Anomalies()...)
	}
	return out
}

// NodeReadFailures is how many reads in a row of a BMC (Redfish, IPMI) may
// fail before sampling ends: each is a missing sample the power audit
// judges.
const NodeReadFailures = 5

// TolerantNote says in run.json's telemetry note what a failed read of a
// source wrapped with NewTolerant(src, NodeReadFailures, clock) does.
func TolerantNote() string {
	return fmt.Sprintf("a failed read leaves its sample out (event %s; at most %d in a row)", AnomalyReadFailed, NodeReadFailures)
}
