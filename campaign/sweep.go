package campaign

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/joulebench/joulebench/compare"
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
	// NotApplicable says whether a failed run's reason (run.json's) means
	// the combination does not apply (the model cannot do the task: its
	// prompts overflow the context), and why; nil: none does. Such a run
	// is not a failure: it is counted and listed apart, and compare shows
	// it as an n/a row. (compare.Profile.NotApplicableReason.)
	NotApplicable func(reason string) (why string, ok bool)
	// Starter starts each local run's process (nil: ExecStarter, Binary
	// as a child process).
	Starter Starter
	// InterruptGrace is how long a local run interrupted by ctx has to
	// stop cleanly before it is killed (0: 2 minutes).
	InterruptGrace time.Duration
	// BackendFailures is how many consecutive failures of a backend's
	// status call (squeue, the pods' list) stop the sweep, its jobs left
	// running (0: DefaultBackendFailures; policy.go).
	BackendFailures int
}

func (o *Options) defaults() {
	if o.Starter == nil {
		o.Starter = ExecStarter{}
	}
	if o.InterruptGrace == 0 {
		o.InterruptGrace = 2 * time.Minute
	}
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
	// NotApplicable are the runs whose latest attempt failed because the
	// combination does not apply (Options.NotApplicable), as compare's n/a
	// rows.
	NotApplicable []compare.NotApplicable
}

// collect reads every run's archives into a Result.
func (c *Campaign) collect(p Plan, running map[string]bool, opt Options) (Result, error) {
	var res Result
	for _, r := range p.Runs {
		as, err := c.Attempts(r)
		if err != nil {
			return res, err
		}
		st := Status(as)
		if running[r.ID] {
			st = Running
		}
		switch st {
		case Complete:
			res.Summary.Done++
			last, _ := Latest(as)
			res.Complete = append(res.Complete, last.Dir)
		case Running:
			res.Summary.Running++
		case Failed:
			last, _ := Latest(as)
			if why, ok := opt.notApplicable(last.Reason); ok {
				res.Summary.NotApplicable++
				na := c.naRow(r.Axes, why+" ("+last.Reason+")")
				na.RunID, na.Dir = r.ID, last.Dir
				res.NotApplicable = append(res.NotApplicable, na)
				continue
			}
			res.Summary.Failed++
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
			if why, ok := o.notApplicable(last.Reason); ok {
				fmt.Fprintf(o.Log, "skip %s: %s (%s); --retry-failed runs it again\n", r.ID, why, last.Reason)
				continue
			}
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

func (o Options) notApplicable(reason string) (string, bool) {
	if o.NotApplicable == nil || reason == "" {
		return "", false
	}
	return o.NotApplicable(reason)
}

// naRow is compare's n/a row of a combination given by its axis values:
// the model and engine as run.json names them (--model, --engine), the
// scenario as its label, the other axes as its setting.
func (c *Campaign) naRow(axes map[string]string, reason string) compare.NotApplicable {
	na := compare.NotApplicable{Scenario: axes["scenario"], Model: axes["model"], Engine: axes["engine"], Reason: reason}
	for _, e := range c.Matrix.Engine {
		if e.Name == axes["engine"] {
			na.Engine = e.Kind
		}
	}
	for _, m := range c.Matrix.Model {
		if m.Name == axes["model"] && m.ID != "" {
			na.Model = m.ID
		}
	}
	keys := make([]string, 0, len(axes))
	for k := range axes {
		if _, builtin := axisNames[k]; (!builtin || k == "load") && k != "rep" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		na.Setting = append(na.Setting, compare.FieldValue{Field: k, Value: axes[k]})
	}
	for _, v := range []*string{&na.Scenario, &na.Model, &na.Engine} {
		if *v == "" {
			*v = "-"
		}
	}
	return na
}

// ExcludedCombinations are the combinations the campaign's exclude list
// leaves out, as compare's n/a rows: a model that does not support a task
// is not applicable, neither a failure nor an absence. Each combination
// is listed once, whatever the repetitions.
func (c *Campaign) ExcludedCombinations() []compare.NotApplicable {
	var out []compare.NotApplicable
	c.eachCombination(func(axes map[string]string) {
		for i, ex := range c.Exclude {
			if matches(ex, axes) {
				out = append(out, c.naRow(axes, fmt.Sprintf("not applicable: excluded by the campaign (exclude[%d]: %s)", i, describeMap(ex))))
				return
			}
		}
	})
	return out
}

func matches(ex, axes map[string]string) bool {
	if len(ex) == 0 {
		return false
	}
	for k, v := range ex {
		if axes[k] != v {
			return false
		}
	}
	return true
}

func describeMap(m map[string]string) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

// eachCombination calls f with the axis values of every combination of
// the matrix (repetitions aside).
func (c *Campaign) eachCombination(f func(axes map[string]string)) {
	axes := []struct {
		name   string
		values []string
	}{}
	vals := c.axisValues()
	for _, k := range append([]string{"engine", "model", "scenario", "load"}, sortedKeys(c.Matrix.Set)...) {
		if vs := vals[k]; len(vs) > 0 {
			axes = append(axes, struct {
				name   string
				values []string
			}{k, vs})
		}
	}
	cur := map[string]string{}
	var walk func(i int)
	walk = func(i int) {
		if i == len(axes) {
			f(cloneMap(cur))
			return
		}
		for _, v := range axes[i].values {
			cur[axes[i].name] = v
			walk(i + 1)
		}
	}
	walk(0)
}
