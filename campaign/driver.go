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

// Jobs is a cluster executor's side of a sweep (Campaign.Drive): its
// backend's verbs over one sweep's jobs. The driver owns the order of a
// sweep (re-attach, submit, follow), the campaign's lock and what a
// failed submission leaves.
type Jobs interface {
	// Reattach finds the jobs a previous sweep left that go on, and
	// returns their runs' ids: followed, not submitted again.
	Reattach(ctx context.Context) ([]string, error)
	// BeforeSubmit checks what the runs to submit need (Slurm: the
	// partition's nodes); called only when there are runs to submit.
	BeforeSubmit(ctx context.Context, todo []Run) error
	// Submit submits run r's job and records it for the next sweep to
	// re-attach to; msg says what was submitted.
	Submit(ctx context.Context, r Run) (msg string, err error)
	// Follower follows every job re-attached or submitted: what names
	// its status call, poll is its interval (Follow).
	Follower() (f Follower, what string, poll time.Duration)
}

// Drive runs a sweep on a cluster under the campaign's lock: it
// re-attaches to the jobs a previous sweep left (Jobs.Reattach), submits
// the runs still to run (stopping when ctx is done; a failed submission
// stops the sweep, the jobs so far going on for the next sweep to
// re-attach to), then follows every job (Follow).
func (c *Campaign) Drive(ctx context.Context, p Plan, o Options, j Jobs) (res Result, err error) {
	o.defaults()
	lock, err := c.Lock()
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if uerr := lock.Unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("campaign lock: %w", uerr)
		}
	}()
	going, err := j.Reattach(ctx)
	if err != nil {
		return Result{}, err
	}
	skip := make(map[string]bool, len(going))
	for _, id := range going {
		skip[id] = true
	}
	todo, err := c.todo(p, o, skip)
	if err != nil {
		return Result{}, err
	}
	if len(todo) > 0 {
		if err := j.BeforeSubmit(ctx, todo); err != nil {
			return Result{}, err
		}
	}
	followed := len(going)
	for _, r := range todo {
		if ctx.Err() != nil {
			break
		}
		msg, err := j.Submit(ctx, r)
		if err != nil {
			return Result{}, LeftRunning(err, followed)
		}
		followed++
		fmt.Fprintln(o.Log, msg)
	}
	f, what, poll := j.Follower()
	return c.Follow(ctx, p, o, f, what, poll)
}
