package campaign

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// Outcome is where a run stands, from its archives.
type Outcome string

// Outcomes.
const (
	// Pending: no archive yet.
	Pending Outcome = "pending"
	// Complete: the latest archive's run.json says complete.
	Complete Outcome = "complete"
	// Failed: the latest archive says failed, or holds no run.json (the
	// run died before it could write one). Re-run only with --retry-failed.
	Failed Outcome = "failed"
	// Interrupted: the latest archive says interrupted, or still says
	// running while nothing runs it (the sweep was killed). Re-run on resume.
	Interrupted Outcome = "interrupted"
	// Running: a run in progress (this sweep's, or a Slurm job's).
	Running Outcome = "running"
)

// Attempt is one archive directory of a run.
type Attempt struct {
	Dir    string
	Status string // run.json status; "" when there is no run.json
	Reason string
	// StartedAt and EndedAt are run.json's, for time estimates.
	StartedAt, EndedAt float64
}

// Attempts lists a run's archive directories, oldest first: runs/<id>,
// runs/<id>.try2, runs/<id>.try3, ...
func (c *Campaign) Attempts(r Run) ([]Attempt, error) {
	var out []Attempt
	for n := 1; ; n++ {
		dir := c.attemptDir(r, n)
		if _, err := os.Stat(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return out, nil
			}
			return nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		a := Attempt{Dir: dir}
		m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
		switch {
		case err == nil:
			a.Status, a.Reason, a.StartedAt, a.EndedAt = m.Status, m.Reason, m.StartedAt, m.EndedAt
		case errors.Is(err, fs.ErrNotExist):
			a.Reason = "no " + archive.RunFile + " (the run ended before it wrote one)"
		default:
			a.Reason = err.Error()
		}
		out = append(out, a)
	}
}

func (c *Campaign) attemptDir(r Run, n int) string {
	name := r.ID
	if n > 1 {
		name += ".try" + strconv.Itoa(n)
	}
	return filepath.Join(c.RunsDir(), name)
}

// NextDir is the directory of a run's next attempt: never an existing one.
func (c *Campaign) NextDir(r Run) (string, error) {
	as, err := c.Attempts(r)
	if err != nil {
		return "", err
	}
	return c.attemptDir(r, len(as)+1), nil
}

// Status is a run's outcome from its latest attempt.
func Status(as []Attempt) Outcome {
	if len(as) == 0 {
		return Pending
	}
	switch as[len(as)-1].Status {
	case record.StatusComplete:
		return Complete
	case record.StatusInterrupted, record.StatusRunning:
		return Interrupted
	default:
		return Failed
	}
}

// Latest returns the latest attempt.
func Latest(as []Attempt) (Attempt, bool) {
	if len(as) == 0 {
		return Attempt{}, false
	}
	return as[len(as)-1], true
}

// ToRun decides whether a run should run now: pending and interrupted runs
// do, failed ones only with retryFailed, complete ones never.
func ToRun(o Outcome, retryFailed bool) bool {
	switch o {
	case Pending, Interrupted:
		return true
	case Failed:
		return retryFailed
	}
	return false
}

// Summary counts runs by outcome.
type Summary struct {
	Done, Running, Left, Failed int
	// NotApplicable counts the runs that failed because the combination
	// does not apply (Options.NotApplicable): not failures.
	NotApplicable int
}

func (s Summary) String() string {
	parts := []string{fmt.Sprintf("%d done", s.Done), fmt.Sprintf("%d running", s.Running), fmt.Sprintf("%d left", s.Left)}
	if s.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", s.Failed))
	}
	if s.NotApplicable > 0 {
		parts = append(parts, fmt.Sprintf("%d not applicable", s.NotApplicable))
	}
	return strings.Join(parts, ", ")
}
