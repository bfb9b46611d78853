package campaign

import (
	"context"
	"fmt"
	"io"
	"time"
)

// The one error policy of every executor (docs/campaigns.md, "When
// something fails"):
//
//   - every backend call (squeue, sbatch, scancel, a Kubernetes API
//     request) has a timeout (BackendCallTimeout);
//   - a backend's status call that fails (squeue, listing the pods) is a
//     transient error: said on the log and tried again, with a backoff
//     from the poll interval doubling up to MaxBackoff, up to
//     Options.BackendFailures consecutive failures; then the sweep stops
//     with the error, leaving its jobs running and its state resumable
//     (the next sweep re-attaches);
//   - a bookkeeping error (the state file, a run's record) stops the sweep
//     the same way: it never cancels nor deletes a running job, except
//     the job just submitted whose record could not be written (it would
//     run untracked);
//   - only Ctrl-C (ctx done) cancels the jobs the sweep follows;
//   - every error is said: returned, or on the log when the sweep goes on.

// BackendCallTimeout bounds one call to a backend (a Slurm command, a
// Kubernetes API request) that has no bound of its own.
const BackendCallTimeout = 2 * time.Minute

// DefaultBackendFailures is Options.BackendFailures when it is not set:
// with the backoff, a backend down for several minutes.
const DefaultBackendFailures = 10

// MaxBackoff caps the wait between two tries of a failing backend call.
const MaxBackoff = time.Minute

// CallContext is ctx bounded by BackendCallTimeout: the context of one
// backend call.
func CallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, BackendCallTimeout)
}

// Transient follows the consecutive failures of one backend call that a
// sweep makes at every poll (squeue, the pods' list): Failed says what
// failed and how long to wait before the next try, or, past the bound,
// the error that stops the sweep; Succeeded starts the count again.
type Transient struct {
	// What names the call in messages ("squeue", "list pods").
	What string
	// Max is how many consecutive failures stop the sweep (0:
	// DefaultBackendFailures).
	Max int
	// Poll is the first wait; it doubles up to MaxBackoff (at least Poll).
	Poll time.Duration
	n    int
}

// NewTransient is the follower of call what, polled every poll, bound
// as o says.
func NewTransient(what string, poll time.Duration, o Options) *Transient {
	return &Transient{What: what, Max: o.BackendFailures, Poll: poll}
}

func (t *Transient) max() int {
	if t.Max <= 0 {
		return DefaultBackendFailures
	}
	return t.Max
}

// Failed records a failure of the call and says it on log: the wait
// before the next try, or, past the bound, the error that stops the
// sweep (its jobs left running, the state resumable).
func (t *Transient) Failed(err error, log io.Writer) (time.Duration, error) {
	t.n++
	if t.n >= t.max() {
		return 0, fmt.Errorf("%s failed %d times in a row, the last: %w; the sweep stops and leaves its jobs running: run it again to re-attach to them", t.What, t.n, err)
	}
	wait := t.Poll
	for i := 1; i < t.n && wait < MaxBackoff; i++ {
		wait *= 2
	}
	wait = min(wait, max(MaxBackoff, t.Poll))
	fmt.Fprintf(log, "%s: %v (try %d of %d; again in %s)\n", t.What, err, t.n, t.max(), wait)
	return wait, nil
}

// Succeeded starts the count of consecutive failures again.
func (t *Transient) Succeeded() { t.n = 0 }

// Sleep waits d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
