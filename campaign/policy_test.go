package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// completeJobs makes every queued job's run complete and leave the queue.
func completeJobs(t *testing.T, f *fakeSlurm) {
	for id := range f.queue {
		script, _ := os.ReadFile(f.scripts[id])
		dir := strings.Fields(string(script)[strings.Index(string(script), " --out "):])[1]
		writeMeta(t, dir, "complete")
		delete(f.queue, id)
	}
}

// A squeue that fails (the controller restarting) is said and tried
// again, before the submit and while the jobs run; the sweep goes on.
func TestSlurmSqueueFailureRetried(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}]\nslurm: {gpus: false, poll: 10ms}\n")
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	squeues := 0
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "squeue" {
			squeues++
			switch squeues {
			case 1, 3: // the first look, and a poll while job 101 runs
				return nil, errors.New("squeue: exit status 1: slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
			case 4:
				completeJobs(t, f)
			}
		}
		return f.run(ctx, name, args...)
	}
	var log strings.Builder
	res, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb", Log: &log}, run)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if res.Summary.Done != 1 {
		t.Errorf("summary %s\n%s", res.Summary, log.String())
	}
	if n := strings.Count(log.String(), "Unable to contact slurm controller (connect failure) (try 1 of 10;"); n != 2 {
		t.Errorf("%d retries said, want 2:\n%s", n, log.String())
	}
}

// A squeue that keeps failing stops the sweep after Options.BackendFailures
// tries, with the error, leaving the job running (no scancel) and in the
// state file: the next sweep re-attaches to it.
func TestSlurmSqueueDownLeavesJobs(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}]\nslurm: {gpus: false, poll: 10ms}\n")
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	squeues := 0
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "squeue" {
			if squeues++; squeues > 1 {
				return nil, errors.New("squeue: exit status 1: Socket timed out")
			}
		}
		return f.run(ctx, name, args...)
	}
	var log strings.Builder
	_, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb", Log: &log, BackendFailures: 3}, run)
	if err == nil || !strings.Contains(err.Error(), "squeue failed 3 times in a row, the last: ") || !strings.Contains(err.Error(), "Socket timed out") {
		t.Fatalf("error %v\n%s", err, log.String())
	}
	for _, call := range f.calls {
		if strings.HasPrefix(call, "scancel") {
			t.Errorf("the job was cancelled: %s", call)
		}
	}
	st, rerr := c.readState()
	if rerr != nil || len(st.Jobs) != 1 || st.Jobs[0].JobID != "101" {
		t.Errorf("state %+v, %v: want job 101 recorded", st, rerr)
	}
}

// The state file cannot be written after sbatch: the job just submitted
// would run untracked, so it is cancelled and the error says so; the
// sweep stops.
func TestSlurmStateWriteFailureCancelsJob(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}, {id: b}]\nslurm: {gpus: false, poll: 10ms}\n")
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "sbatch" && f.next == 1 {
			// The second submit: the state file becomes a directory
			// that cannot be replaced (the disk "fails").
			state := filepath.Join(c.Dir, StateFile)
			if err := os.Remove(state); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(state, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return f.run(ctx, name, args...)
	}
	var log strings.Builder
	_, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb", Log: &log}, run)
	if err == nil || !strings.Contains(err.Error(), "slurm state") || !strings.Contains(err.Error(), "job 102 cancelled") {
		t.Fatalf("error %v\n%s", err, log.String())
	}
	var cancels []string
	for _, call := range f.calls {
		if strings.HasPrefix(call, "scancel") {
			cancels = append(cancels, call)
		}
	}
	// Job 101, recorded, goes on; job 102, not recorded, is cancelled.
	if len(cancels) != 1 || cancels[0] != "scancel 102" {
		t.Errorf("scancel calls %q, want [scancel 102]", cancels)
	}
}

// The backoff doubles from the poll interval up to MaxBackoff; the bound
// stops.
func TestTransientBackoff(t *testing.T) {
	tr := &Transient{What: "squeue", Max: 9, Poll: 10 * time.Second}
	var log strings.Builder
	// 10s, 20s, 40s, then MaxBackoff (1m).
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		d, err := tr.Failed(errors.New("down"), &log)
		if err != nil || d != w {
			t.Errorf("failure %d: %s, %v; want %s", i+1, d, err, w)
		}
	}
	tr.Succeeded()
	for i := 1; i < 9; i++ {
		if _, err := tr.Failed(errors.New("down"), &log); err != nil {
			t.Fatalf("failure %d after a success: %v", i, err)
		}
	}
	if _, err := tr.Failed(errors.New("down"), &log); err == nil || !strings.Contains(err.Error(), "squeue failed 9 times in a row") {
		t.Errorf("9th failure: %v", err)
	}
}

// The Slurm commands as the sweep runs them (ExecCommander, from PATH):
// stand-in sbatch, squeue and sacct scripts, squeue failing on its first
// call as a controller that restarts does. The sweep says the failure,
// tries again and follows the job to its end.
func TestSlurmSqueueStandInFailsOnce(t *testing.T) {
	bin := t.TempDir()
	count := filepath.Join(bin, "squeue.count")
	scripts := map[string]string{
		"sbatch": "#!/bin/sh\necho 4242\n",
		"squeue": "#!/bin/sh\nn=$(cat '" + count + "' 2>/dev/null || echo 0)\necho $((n+1)) > '" + count + "'\n" +
			"if [ \"$n\" = 1 ]; then echo 'squeue: error: slurm_load_jobs error: Socket timed out on send/recv operation' >&2; exit 1; fi\n",
		"sacct":   "#!/bin/sh\necho '4242|COMPLETED'\n",
		"scancel": "#!/bin/sh\necho \"scancel $*\" >> '" + filepath.Join(bin, "scancel.log") + "'\n",
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}]\nslurm: {gpus: false, poll: 10ms}\n")
	var log strings.Builder
	if _, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb", Log: &log}, nil); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	s := log.String()
	// squeue's first call is the sweep's first look (it succeeds), the
	// second fails, the third sees the job gone: sacct says COMPLETED.
	if !strings.Contains(s, "squeue: slurm: squeue: exit status 1: squeue: error: slurm_load_jobs error: Socket timed out on send/recv operation (try 1 of 10; again in 10ms)") ||
		!strings.Contains(s, "job 4242 (") || !strings.Contains(s, "COMPLETED") {
		t.Errorf("log:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(bin, "scancel.log")); err == nil {
		t.Error("scancel called")
	}
}
