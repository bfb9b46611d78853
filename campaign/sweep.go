package campaign

import (
	"fmt"
	"io"
	"time"
)

// Options configure a sweep.
type Options struct {
	// Binary is the joulebench executable each run is (and, on Slurm, the
	// default on the nodes).
	Binary string
	// Env is the environment of each local run (nil: this process's).
	Env []string
	// RetryFailed re-runs failed runs (into a new directory).
	RetryFailed bool
	// Log gets the progress lines (nil: discarded).
	Log io.Writer
	// Now is the clock of the time estimate (nil: time.Now).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Result is what a sweep leaves.
type Result struct {
	// Summary counts the runs of the plan at the end.
	Summary Summary
	// Complete lists the latest complete archive of each run, in plan
	// order: what compare gets.
	Complete []string
	// Failed names the runs whose latest attempt failed, with the reason.
	Failed []string
	// Interrupted is true when the sweep stopped on ctx (Ctrl-C).
	Interrupted bool
}

// collect reads every run's archives into a Result.
func (c *Campaign) collect(p Plan, running map[string]bool) (Result, error) {
	var res Result
	for _, r := range p.Runs {
		as, err := c.Attempts(r)
		if err != nil {
			return res, err
		}
		o := Status(as)
		if running[r.ID] {
			o = Running
		}
		switch o {
		case Complete:
			res.Summary.Done++
			last, _ := Latest(as)
			res.Complete = append(res.Complete, last.Dir)
		case Running:
			res.Summary.Running++
		case Failed:
			res.Summary.Failed++
			last, _ := Latest(as)
			res.Failed = append(res.Failed, fmt.Sprintf("%s: %s", r.ID, orStr(last.Reason, "failed")))
		default:
			res.Summary.Left++
		}
	}
	return res, nil
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// todo returns the runs to start now, and prints those skipped.
func (c *Campaign) todo(p Plan, o Options, skip map[string]bool) ([]Run, error) {
	var out []Run
	for _, r := range p.Runs {
		if skip[r.ID] {
			continue
		}
		as, err := c.Attempts(r)
		if err != nil {
			return nil, err
		}
		st := Status(as)
		switch {
		case ToRun(st, o.RetryFailed):
			out = append(out, r)
		case st == Complete:
			last, _ := Latest(as)
			fmt.Fprintf(o.Log, "skip %s: complete archive %s\n", r.ID, last.Dir)
		case st == Failed:
			last, _ := Latest(as)
			fmt.Fprintf(o.Log, "skip %s: failed (%s); --retry-failed re-runs it in a new directory\n", r.ID, orStr(last.Reason, "no reason recorded"))
		}
	}
	return out, nil
}

// estimator estimates the time left from the durations of the runs done
// in this sweep.
type estimator struct {
	total time.Duration
	n     int
}

func (e *estimator) add(d time.Duration) { e.total += d; e.n++ }

// left is the estimate for runs runs, "" before any run ended.
func (e *estimator) left(runs int) string {
	if e.n == 0 || runs == 0 {
		return ""
	}
	d := time.Duration(int64(e.total) / int64(e.n) * int64(runs))
	return fmt.Sprintf(", about %s left", d.Round(time.Second))
}
