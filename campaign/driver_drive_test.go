package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeJobs records the driver's calls; submitFail fails the submission of
// that run.
type fakeJobs struct {
	going      []string
	calls      []string
	submitFail string
	cancel     func() // called after the first submission
}

func (f *fakeJobs) Reattach(context.Context) ([]string, error) {
	f.calls = append(f.calls, "reattach")
	return f.going, nil
}

func (f *fakeJobs) BeforeSubmit(_ context.Context, todo []Run) error {
	f.calls = append(f.calls, "before "+string(rune('0'+len(todo))))
	return nil
}

func (f *fakeJobs) Submit(_ context.Context, r Run) (string, error) {
	if r.ID == f.submitFail {
		return "", errors.New("sbatch: refused")
	}
	f.calls = append(f.calls, "submit "+r.ID)
	if f.cancel != nil {
		f.cancel()
	}
	return "submitted " + r.ID, nil
}

func (f *fakeJobs) Follower() (Follower, string, time.Duration) {
	f.calls = append(f.calls, "follow")
	return doneFollower{}, "status", time.Millisecond
}

// doneFollower follows no job: every run has ended.
type doneFollower struct{}

func (doneFollower) Status(context.Context) error { return nil }
func (doneFollower) Settle(context.Context) ([]string, bool, error) {
	return nil, false, nil
}
func (doneFollower) Cancel()        {}
func (doneFollower) Following() int { return 0 }

// The driver re-attaches, submits only the runs not re-attached, then
// follows; a failed submission stops the sweep saying the jobs so far go
// on; Ctrl-C stops the submissions and the jobs are followed (cancelled).
func TestDrive(t *testing.T) {
	src := "name: t\nprofile: benchmark-1.5\nout: out\nrepetitions: 3\nmatrix: {engine: [{kind: sim}]}\n"
	c := load(t, src)
	p := c.Expand()
	if len(p.Runs) != 3 {
		t.Fatalf("%d runs", len(p.Runs))
	}
	ids := []string{p.Runs[0].ID, p.Runs[1].ID, p.Runs[2].ID}

	f := &fakeJobs{going: ids[1:2]}
	if _, err := c.Drive(context.Background(), p, Options{}, f); err != nil {
		t.Fatal(err)
	}
	want := "reattach|before 2|submit " + ids[0] + "|submit " + ids[2] + "|follow"
	if got := strings.Join(f.calls, "|"); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}

	f = &fakeJobs{going: ids[:1], submitFail: ids[2]}
	_, err := c.Drive(context.Background(), p, Options{}, f)
	// One re-attached and one submitted go on.
	if err == nil || !strings.Contains(err.Error(), "sbatch: refused") || !strings.Contains(err.Error(), "its 2 jobs go on") {
		t.Errorf("failed submission: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	f = &fakeJobs{cancel: cancel}
	res, err := c.Drive(ctx, p, Options{}, f)
	if err != nil || !res.Interrupted || strings.Count(strings.Join(f.calls, "|"), "submit") != 1 {
		t.Errorf("interrupted: %v, %+v, calls %v", err, res.Interrupted, f.calls)
	}
}
