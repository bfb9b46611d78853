package campaign

import (
	"context"
	"fmt"
	"time"
)

// Follower is what an executor whose runs are a cluster's jobs (Slurm,
// Kubernetes) gives the shared driver (Campaign.Follow): its backend's
// verbs over the jobs it follows. The driver owns the poll loop, the
// error policy (policy.go), Ctrl-C and the progress lines; the backend
// keeps no loop of its own.
type Follower interface {
	// Status makes the backend's one status call of a poll (squeue, the
	// pods' list) and keeps what it says for Settle. Its error is
	// transient: retried as the policy says.
	Status(ctx context.Context) error
	// Settle acts on what Status saw: records the runs that ended
	// (fetches their archives, writes their records, the state file) and
	// returns the runs still followed and whether any ended. Its error is
	// a bookkeeping error: the sweep stops, the jobs still followed go on.
	Settle(ctx context.Context) (running []string, changed bool, err error)
	// Cancel cancels (deletes) every job followed: ctx is done.
	Cancel()
	// Following is how many jobs are followed now.
	Following() int
}

// Follow polls f every poll until no job is followed, and returns where
// every run of the plan stands. what names f's status call in messages.
// When ctx is done it cancels the jobs (Result.Interrupted); a status
// call that keeps failing, or a bookkeeping error, stops it with the
// error, the jobs left running for the next sweep to re-attach to.
func (c *Campaign) Follow(ctx context.Context, p Plan, o Options, f Follower, what string, poll time.Duration) (Result, error) {
	o.defaults()
	status := NewTransient(what, poll, o)
	for {
		if ctx.Err() != nil {
			f.Cancel()
			res, err := c.collect(p, nil, o)
			res.Interrupted = true
			return res, err
		}
		if err := f.Status(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			wait, stop := status.Failed(err, o.Log)
			if stop != nil {
				return Result{}, LeftRunning(stop, f.Following())
			}
			Sleep(ctx, wait)
			continue
		}
		status.Succeeded()
		running, changed, err := f.Settle(ctx)
		if err != nil {
			return Result{}, LeftRunning(err, len(running))
		}
		set := make(map[string]bool, len(running))
		for _, id := range running {
			set[id] = true
		}
		res, err := c.collect(p, set, o)
		if err != nil {
			return res, LeftRunning(err, len(running))
		}
		if len(running) == 0 {
			return res, nil
		}
		if changed {
			fmt.Fprintf(o.Log, "campaign %s: %s\n", c.Name, res.Summary)
		}
		Sleep(ctx, poll)
	}
}

// LeftRunning is err, saying that the n jobs the sweep followed go on.
func LeftRunning(err error, n int) error {
	if n <= 0 {
		return err
	}
	return fmt.Errorf("%w (the sweep stopped; its %d %s go on: run it again to re-attach)", err, n, plural(n, "job", "jobs"))
}
