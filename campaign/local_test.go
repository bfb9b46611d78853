package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// An attempt interrupted after its log was opened and before its run made
// its directory left a log of the name the next attempt uses (the same
// run directory): the next attempt appends to it, keeping the earlier
// lines, instead of failing on the existing file (a resumed search hit
// "log: ... file exists").
func TestRunLocalAppendsToAnEarlierLog(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n")
	r := c.Expand().Runs[0]
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := c.NextDir(r)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(c.Dir, "logs", filepath.Base(dir)+".log")
	if err := os.WriteFile(logPath, []byte("the interrupted attempt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /bin/echo stands for joulebench: it prints its arguments and exits.
	if err := c.runLocal(context.Background(), r, Options{Binary: "/bin/echo", Log: io.Discard}); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "the interrupted attempt\n--- joulebench sweep: a new attempt into "+dir) || !strings.Contains(s, "run --spec "+filepath.Join(c.Dir, "logs", filepath.Base(dir)+".spec.json")) {
		t.Errorf("log:\n%s", s)
	}
}

// fakeStarter stands for the joulebench executable: each run it starts
// writes run.json into its --out directory with the status that behave
// gives, and exits as behave says.
type fakeStarter struct {
	t *testing.T
	// behave says how the n-th start (from 0) of a run goes.
	behave func(n int, dir string) fakeRun
	starts [][]string // the arguments of each start
	envs   [][]string
	pids   []string // the PID file's content while each run ran
}

var (
	_ Starter = (*fakeStarter)(nil)
	_ Process = (*fakeProc)(nil)
)

type fakeRun struct {
	status    string // written at exit ("": none)
	code      int
	startErr  error
	waitErr   error
	untilStop bool // runs until interrupted (then writes status interrupted)
	deaf      bool // ignores the interrupt: only a kill ends it
	onStart   func()
}

type fakeProc struct {
	s       *fakeStarter
	run     fakeRun
	dir     string
	pidFile string
	done    chan Exit
	stop    chan struct{}
	once    sync.Once
}

func (s *fakeStarter) Start(binary string, args, env []string, output io.Writer) (Process, error) {
	n := len(s.starts)
	s.starts, s.envs = append(s.starts, args), append(s.envs, env)
	var dir string
	for i, a := range args {
		if a == "--out" && i+1 < len(args) {
			dir = args[i+1]
		}
	}
	fr := s.behave(n, dir)
	if fr.startErr != nil {
		return nil, fr.startErr
	}
	fmt.Fprintf(output, "%s %s\n", binary, strings.Join(args, " "))
	logs := filepath.Join(filepath.Dir(filepath.Dir(dir)), "logs")
	p := &fakeProc{s: s, run: fr, dir: dir, pidFile: filepath.Join(logs, filepath.Base(dir)+".pid"), done: make(chan Exit, 1), stop: make(chan struct{})}
	if fr.onStart != nil {
		fr.onStart()
	}
	if !fr.untilStop {
		p.exit(fr.status, Exit{Code: fr.code, Err: fr.waitErr})
	}
	return p, nil
}

// exit writes the archive's status and delivers the exit, once.
func (p *fakeProc) exit(status string, e Exit) {
	p.once.Do(func() {
		if status != "" {
			writeMeta(p.s.t, p.dir, status)
		}
		p.done <- e
	})
}

func (p *fakeProc) Pid() int { return 4242 + len(p.s.starts) }

func (p *fakeProc) Interrupt() error {
	if !p.run.deaf {
		p.exit("interrupted", Exit{Code: 130})
	}
	return nil
}

func (p *fakeProc) Kill() error {
	p.exit("", Exit{Code: -1})
	return nil
}

func (p *fakeProc) Done() <-chan Exit {
	// runLocal waits here once it has written the PID file.
	b, _ := os.ReadFile(p.pidFile)
	p.s.pids = append(p.s.pids, string(b))
	return p.done
}

const twoRuns = "name: t\nprofile: benchmark-1.5\nout: out\nrepetitions: 2\nmatrix: {engine: [{kind: sim}]}\n"

// RunLocal with a fake starter: each run is started once with its
// arguments and environment, the PID file holds its PID while it runs and
// is removed after, complete runs are skipped on the next sweep, failed
// ones only with RetryFailed (into a new directory).
func TestRunLocalFakeStarter(t *testing.T) {
	c := load(t, twoRuns)
	p := c.Expand()
	var log strings.Builder
	fs := &fakeStarter{t: t, behave: func(n int, dir string) fakeRun {
		if n == 1 {
			return fakeRun{status: "failed", code: 1}
		}
		return fakeRun{status: "complete"}
	}}
	o := Options{Binary: "joulebench-fake", Env: []string{"A=1"}, Log: &log, Starter: fs}
	res, err := c.RunLocal(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != (Summary{Done: 1, Failed: 1}) || res.Interrupted || len(res.Complete) != 1 || len(res.Failed) != 1 {
		t.Fatalf("result %+v", res)
	}
	if len(fs.starts) != 2 {
		t.Fatalf("%d starts, want 2", len(fs.starts))
	}
	for i, r := range p.Runs {
		dir := filepath.Join(c.Dir, "runs", r.ID)
		spec := filepath.Join(c.Dir, "logs", r.ID+".spec.json")
		if got, want := strings.Join(fs.starts[i], " "), "run --spec "+spec+" --out "+dir+" --no-progress"; got != want {
			t.Errorf("start %d: args %q, want %q", i, got, want)
		}
		if len(fs.envs[i]) != 1 || fs.envs[i][0] != "A=1" {
			t.Errorf("start %d: env %q", i, fs.envs[i])
		}
		// Pid is 4242 + the number of starts so far (1, then 2).
		if want := fmt.Sprintf("%d\n", 4243+i); fs.pids[i] != want {
			t.Errorf("start %d: PID file %q while it ran, want %q", i, fs.pids[i], want)
		}
	}
	pidFiles, _ := filepath.Glob(filepath.Join(c.Dir, "logs", "*.pid"))
	if len(pidFiles) != 0 {
		t.Errorf("PID files left: %v", pidFiles)
	}
	for _, want := range []string{"[1/2] " + p.Runs[0].ID + " (0 done, 1 running, 1 left)", "[2/2] " + p.Runs[1].ID + " (1 done, 1 running, 0 left", ": exit 1, archive "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}

	// Again: nothing to do without RetryFailed.
	log.Reset()
	if _, err := c.RunLocal(context.Background(), p, o); err != nil || len(fs.starts) != 2 {
		t.Fatalf("second sweep: %v, %d starts", err, len(fs.starts))
	}
	if !strings.Contains(log.String(), "skip "+p.Runs[0].ID+": complete archive") || !strings.Contains(log.String(), "skip "+p.Runs[1].ID+": failed") {
		t.Errorf("second sweep's log:\n%s", log.String())
	}
	// RetryFailed: the failed run again, into <id>.try2.
	o.RetryFailed = true
	res, err = c.RunLocal(context.Background(), p, o)
	if err != nil || len(fs.starts) != 3 || res.Summary != (Summary{Done: 2}) {
		t.Fatalf("retry: %v, %d starts, %+v", err, len(fs.starts), res)
	}
	if want := filepath.Join(c.Dir, "runs", p.Runs[1].ID+".try2"); fs.starts[2][4] != want {
		t.Errorf("retry into %s, want %s", fs.starts[2][4], want)
	}
}

// Cancelled while a run runs: the run is interrupted (and killed when it
// does not stop within the grace), the sweep stops there.
func TestRunLocalInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name, wantLog string
		deaf          bool
		wantLeft      int
	}{
		{"stops cleanly", ": exit 130, archive ", false, 2},
		{"killed after the grace", ": exit -1, archive ", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, twoRuns)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var log strings.Builder
			fs := &fakeStarter{t: t, behave: func(int, string) fakeRun {
				return fakeRun{untilStop: true, deaf: tc.deaf, onStart: cancel}
			}}
			res, err := c.RunLocal(ctx, c.Expand(), Options{Binary: "jb", Log: &log, Starter: fs, InterruptGrace: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			// The interrupted run is left to do (status interrupted, or no
			// run.json after a kill), and so is the one never started.
			if !res.Interrupted || res.Summary != (Summary{Left: tc.wantLeft}) || len(fs.starts) != 1 {
				t.Errorf("result %+v, %d starts", res, len(fs.starts))
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log lacks %q:\n%s", tc.wantLog, log.String())
			}
		})
	}
}

// A run that cannot be started, or not waited for, stops the sweep with
// an error naming the run.
func TestRunLocalStartAndWaitErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  fakeRun
		want string
	}{
		{"start", fakeRun{startErr: errors.New("no such file")}, "start jb: no such file"},
		{"wait", fakeRun{waitErr: errors.New("wait failed")}, ": wait failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, twoRuns)
			p := c.Expand()
			fs := &fakeStarter{t: t, behave: func(int, string) fakeRun { return tc.run }}
			_, err := c.RunLocal(context.Background(), p, Options{Binary: "jb", Starter: fs})
			if err == nil || !strings.Contains(err.Error(), "run "+p.Runs[0].ID) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want run %s ... %s", err, p.Runs[0].ID, tc.want)
			}
		})
	}
}

// ExecStarter: the exit code of a real process is the run's.
func TestExecStarterExitCode(t *testing.T) {
	c := load(t, twoRuns)
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if err := c.runLocal(context.Background(), c.Expand().Runs[0], Options{Binary: "/bin/false", Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), ": exit 1, archive ") {
		t.Errorf("log: %s", log.String())
	}
	if _, err := (ExecStarter{}).Start("/nonexistent/joulebench", nil, nil, io.Discard); err == nil {
		t.Error("a missing executable started")
	}
}
