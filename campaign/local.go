package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// RunLocal runs the plan's runs on this machine, one after the other, each as
// its own `joulebench run` process (its own archive, cold start and power
// monitor). A complete run is skipped; an interrupted one is re-run; a
// failed one only with RetryFailed. Every run goes to a new directory.
//
// When ctx is done the run in progress gets SIGINT (it stops cleanly and
// writes its status) and the sweep stops: Result.Interrupted.
func (c *Campaign) RunLocal(ctx context.Context, p Plan, o Options) (Result, error) {
	o.defaults()
	if o.Binary == "" {
		return Result{}, errors.New("campaign: no joulebench executable")
	}
	todo, err := c.todo(p, o, nil)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return Result{}, fmt.Errorf("campaign directory: %w", err)
	}
	var est estimator
	for i, r := range todo {
		if ctx.Err() != nil {
			break
		}
		res, err := c.collect(p, nil)
		if err != nil {
			return res, err
		}
		res.Summary.Running = 1
		if as, _ := c.Attempts(r); Status(as) == Failed {
			res.Summary.Failed--
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
	res, err := c.collect(p, nil)
	res.Interrupted = ctx.Err() != nil
	return res, err
}

// runLocal runs one configuration into its next directory. The process's
// exit status is not the outcome: its archive is (read by collect).
func (c *Campaign) runLocal(ctx context.Context, r Run, o Options) error {
	dir, err := c.NextDir(r)
	if err != nil {
		return err
	}
	logPath := filepath.Join(c.Dir, "logs", filepath.Base(dir)+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("run %s: log: %w", r.ID, err)
	}
	defer logf.Close()
	cmd := exec.Command(o.Binary, r.Args(dir)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = o.Env
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: start %s: %w", r.ID, o.Binary, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		// The run handles SIGINT: it stops its engine and writes
		// status interrupted. A second signal would end it at once.
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case waitErr = <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			waitErr = <-done
		}
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return fmt.Errorf("run %s: %w", r.ID, waitErr)
	}
	code := 0
	if ee != nil {
		code = ee.ExitCode()
	}
	fmt.Fprintf(o.Log, "    %s: exit %d, archive %s, log %s\n", r.ID, code, dir, logPath)
	return nil
}
