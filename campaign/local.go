package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/runner/runflags"
)

// RunLocal runs the plan's runs on this machine, one after the other, each as
// its own `joulebench run` process (its own archive, cold start and power
// monitor). A complete run is skipped; an interrupted one is re-run; a
// failed one only with RetryFailed. Every run goes to a new directory.
//
// When ctx is done the run in progress gets SIGINT (it stops cleanly and
// writes its status) and the sweep stops: Result.Interrupted.
//
// The sweep holds the campaign's lock (LockFile) while it runs: a second
// sweep of the same campaign gets an error wrapping ErrLocked. Each run's
// PID is recorded in OUT/logs/<attempt>.pid while it runs. On Linux a run
// gets SIGTERM when the sweep dies (even by SIGKILL); elsewhere, and while a
// signalled run is still writing its status, a run left by a killed sweep
// may still be going: the next sweep waits for it to end before it looks
// at the archives.
func (c *Campaign) RunLocal(ctx context.Context, p Plan, o Options) (res Result, err error) {
	o.defaults()
	if o.Binary == "" {
		return Result{}, errors.New("campaign: no joulebench executable")
	}
	lock, err := c.Lock()
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if uerr := lock.Unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("campaign lock: %w", uerr)
		}
	}()
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return Result{}, fmt.Errorf("campaign directory: %w", err)
	}
	if err := c.waitOrphans(ctx, p, o); err != nil {
		if ctx.Err() != nil {
			res, err := c.collect(p, nil, o)
			res.Interrupted = true
			return res, err
		}
		return Result{}, err
	}
	todo, err := c.todo(p, o, nil)
	if err != nil {
		return Result{}, err
	}
	var est estimator
	for i, r := range todo {
		if ctx.Err() != nil {
			break
		}
		res, err := c.collect(p, nil, o)
		if err != nil {
			return res, err
		}
		res.Summary.Running = 1
		if as, _ := c.Attempts(r); Status(as) == Failed {
			if last, _ := Latest(as); isNA(o, last.Reason) {
				res.Summary.NotApplicable--
			} else {
				res.Summary.Failed--
			}
		} else {
			res.Summary.Left--
		}
		fmt.Fprintf(o.Log, "[%d/%d] %s (%s%s)\n", i+1, len(todo), r.ID, res.Summary, est.left(len(todo)-i))
		start := o.Now()
		if err := c.runLocal(ctx, r, o); err != nil {
			return Result{}, err
		}
		est.add(o.Now().Sub(start))
	}
	res, err = c.collect(p, nil, o)
	res.Interrupted = ctx.Err() != nil
	return res, err
}

// runLocal runs one configuration into its next directory. The process's
// exit status is not the outcome: its archive is (read by collect).
func (c *Campaign) runLocal(ctx context.Context, r Run, o Options) error {
	o.defaults()
	dir, err := c.NextDir(r)
	if err != nil {
		return err
	}
	// The log is appended to: an attempt interrupted before its run
	// created its directory left a log of that name, and the next attempt
	// goes into the same directory (its earlier lines are kept).
	logPath := filepath.Join(c.Dir, "logs", filepath.Base(dir)+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("run %s: log: %w", r.ID, err)
	}
	defer logf.Close()
	if fi, err := logf.Stat(); err == nil && fi.Size() > 0 {
		fmt.Fprintf(logf, "--- joulebench sweep: a new attempt into %s (the one above ended before its run directory existed) ---\n", dir)
	}
	// The run's process runs its settings, built at plan time, from a
	// file beside its log; secrets go through the environment: the
	// command line is anyone's to read (ps), and the file holds none.
	spec, err := c.runSettings(r)
	if err != nil {
		return err
	}
	specPath := strings.TrimSuffix(logPath, ".log") + ".spec.json"
	if err := WriteSpec(r, spec, specPath); err != nil {
		return err
	}
	_, secrets := splitSecrets(r.Args(dir))
	proc, err := o.Starter.Start(o.Binary, r.SpecArgs(specPath, dir), childEnv(o.Env, secrets), logf)
	if err != nil {
		return fmt.Errorf("run %s: start %s: %w", r.ID, o.Binary, err)
	}
	pidPath := pidFile(logPath)
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(proc.Pid())+"\n"), 0o644); err != nil {
		fmt.Fprintf(o.Log, "    %s: pid file: %v\n", r.ID, err)
	}
	defer os.Remove(pidPath)
	exit := waitRun(ctx, proc, o.InterruptGrace)
	if exit.Err != nil {
		return fmt.Errorf("run %s: %w", r.ID, exit.Err)
	}
	fmt.Fprintf(o.Log, "    %s: exit %d, archive %s, log %s\n", r.ID, exit.Code, dir, logPath)
	return nil
}

// runSettings are the settings a run's process runs: the run's, with the
// idle level a point against a running server waits for (cooldownArgs).
func (c *Campaign) runSettings(r Run) (runflags.Settings, error) {
	if r.SpecErr != nil {
		return runflags.Settings{}, fmt.Errorf("run %s: %w", r.ID, r.SpecErr)
	}
	s := r.Spec
	if w, ok := c.cooldownIdleW(r); ok {
		s.CooldownIdleW = runflags.Float(w)
		s.Given("cooldown-idle-w")
	}
	return s, nil
}

// waitRun waits for a run's process to end. When ctx is done first the
// run gets an interrupt (it handles SIGINT: it stops its engine and
// writes status interrupted; a second signal would end it at once), and
// is killed when it has not ended grace later.
func waitRun(ctx context.Context, proc Process, grace time.Duration) Exit {
	select {
	case exit := <-proc.Done():
		return exit
	case <-ctx.Done():
	}
	_ = proc.Interrupt()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case exit := <-proc.Done():
		return exit
	case <-t.C:
		_ = proc.Kill()
		return <-proc.Done()
	}
}

// Starter starts the process of one run (Options.Starter): the
// joulebench executable with a run's arguments and environment, its
// standard output and error to output.
type Starter interface {
	Start(binary string, args, env []string, output io.Writer) (Process, error)
}

// Process is a started run.
type Process interface {
	// Pid is its process ID, kept in the run's PID file while it runs.
	Pid() int
	// Interrupt asks it to stop cleanly (SIGINT).
	Interrupt() error
	// Kill ends it at once.
	Kill() error
	// Done delivers how it ended, once.
	Done() <-chan Exit
}

// Exit is how a run's process ended: its exit code (-1 when a signal
// ended it), or Err when it could not be waited for.
type Exit struct {
	Code int
	Err  error
}

// ExecStarter starts runs as child processes: each in its own process
// group and, on Linux, sent SIGTERM when the sweep dies (runAttr).
type ExecStarter struct{}

// Start starts binary with args.
func (ExecStarter) Start(binary string, args, env []string, output io.Writer) (Process, error) {
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = output, output
	cmd.Env = env
	runAttr(cmd)
	done, err := startLocked(cmd)
	if err != nil {
		return nil, err
	}
	return &execProcess{cmd: cmd, done: done}, nil
}

var (
	_ Starter = ExecStarter{}
	_ Process = (*execProcess)(nil)
)

type execProcess struct {
	cmd  *exec.Cmd
	done <-chan Exit
}

func (p *execProcess) Pid() int          { return p.cmd.Process.Pid }
func (p *execProcess) Interrupt() error  { return p.cmd.Process.Signal(os.Interrupt) }
func (p *execProcess) Kill() error       { return p.cmd.Process.Kill() }
func (p *execProcess) Done() <-chan Exit { return p.done }

// exitOf is how Wait's result ends a run: an exit status is the run's
// exit code, any other error an Exit.Err.
func exitOf(err error) Exit {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return Exit{}
	case errors.As(err, &ee):
		return Exit{Code: ee.ExitCode()}
	}
	return Exit{Err: err}
}

// startLocked starts cmd and waits for it on a goroutine locked to its OS
// thread, so that the thread which started the run (the "parent" of a
// Linux parent-death signal) lives as long as the run. The channel gets
// how it ended.
func startLocked(cmd *exec.Cmd) (<-chan Exit, error) {
	started := make(chan error, 1)
	done := make(chan Exit, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- exitOf(cmd.Wait())
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// pidFile is where a run's PID is kept while it runs: next to its log.
func pidFile(logPath string) string {
	return strings.TrimSuffix(logPath, ".log") + ".pid"
}

// waitOrphans waits for the runs a killed sweep left going (their PID file
// names a live process that runs that archive), so that their archives say
// how they ended before this sweep decides what to run. It returns early
// when ctx is done.
func (c *Campaign) waitOrphans(ctx context.Context, p Plan, o Options) error {
	for _, r := range p.Runs {
		as, err := c.Attempts(r)
		if err != nil {
			return err
		}
		last, ok := Latest(as)
		if !ok {
			continue
		}
		pidPath := pidFile(filepath.Join(c.Dir, "logs", filepath.Base(last.Dir)+".log"))
		b, err := os.ReadFile(pidPath)
		if err != nil {
			continue // no PID file: the run ended under its sweep
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if runsArchive(pid, last.Dir) {
			fmt.Fprintf(o.Log, "run %s: pid %d, left by a sweep that was killed, still runs %s; waiting for it to end\n", r.ID, pid, last.Dir)
			t := time.NewTicker(500 * time.Millisecond)
			for runsArchive(pid, last.Dir) {
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
			t.Stop()
			fmt.Fprintf(o.Log, "run %s: pid %d ended\n", r.ID, pid)
		}
		if err := os.Remove(pidPath); err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
	}
	return nil
}

// runsArchive reports whether process pid is alive and, where /proc tells
// (Linux), is a run of archive dir: a PID reused by another process, or a
// zombie (empty command line), is not.
func runsArchive(pid int, dir string) bool {
	if !alive(pid) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return true
	}
	for _, arg := range bytes.Split(b, []byte{0}) {
		if string(arg) == dir {
			return true
		}
	}
	return false
}

func isNA(o Options, reason string) bool {
	_, ok := o.notApplicable(reason)
	return ok
}
