package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/report"
)

// SweepCommand is `joulebench sweep PATH`: the campaign opened and
// checked, its executor chosen, a dry run or the sweep, the comparison
// of its complete runs and a search's frontier figure. The command line
// gives the values and the comparison's rendering (Compare, Frontier).
type SweepCommand struct {
	Path string
	// Format is the final comparison's format (report.CheckFormat).
	Format string
	// Executors are those a sweep may name; Executor names the one.
	Executors []Executor
	Executor  string
	// Binary is the joulebench executable each run is ("": this one).
	Binary              string
	DryRun, RetryFailed bool
	Checker             Checker
	// Out gets the plan and the comparison; Log the progress.
	Out, Log io.Writer
	Redact   *redact.Redactor
	// CheckCompare checks the comparison's options before anything runs
	// (nil: none).
	CheckCompare func() error
	// Compare shows the comparison of the runs in dirs, the combinations
	// na not applicable; Frontier draws a search's frontier of dirs into
	// the file path.
	Compare  func(ctx context.Context, dirs []string, na []compare.NotApplicable) error
	Frontier func(ctx context.Context, dirs []string, path string) error
}

// Run runs the command. Its errors carry their exit codes
// (internal/exitcode): an interrupted sweep exits as interrupted.
func (s SweepCommand) Run(ctx context.Context) error {
	if err := report.CheckFormat(s.Format); err != nil {
		return exitcode.With(exitcode.Invalid, err)
	}
	executors, err := NewExecutors(s.Executors...)
	if err != nil {
		return err
	}
	executor, err := executors.Lookup(s.Executor)
	if err != nil {
		return err
	}
	c, plan, err := s.Checker.Open(s.Path)
	if err != nil {
		return err
	}
	if s.CheckCompare != nil {
		if err := s.CheckCompare(); err != nil {
			return err
		}
	}
	bin := s.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("sweep: this executable: %w", err)
		}
	}
	if s.DryRun {
		return c.DryRunWith(s.Out, plan, bin, executor, s.Redact)
	}
	rules, err := compare.Builtin()
	if err != nil {
		return err
	}
	opts := Options{Binary: bin, RetryFailed: s.RetryFailed, Log: s.Log, NotApplicable: rules.NotApplicableReason}
	res, err := c.SweepWith(ctx, plan, executor, opts, s.Log)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", s.Path, err)
	}
	if res.Interrupted {
		return exitcode.With(exitcode.Interrupted, fmt.Errorf("sweep %s interrupted: %s; run sweep again to resume", s.Path, res.Summary))
	}
	return s.show(ctx, c, plan, res)
}

// show compares the sweep's complete runs, draws a search's frontier and
// returns the sweep's outcome.
func (s SweepCommand) show(ctx context.Context, c *Campaign, plan Plan, res Result) error {
	if len(res.Complete) > 0 {
		fmt.Fprintf(s.Out, "== campaign %s: %d complete runs compared\n", c.Name, len(res.Complete))
		na := append(c.ExcludedCombinations(), res.NotApplicable...)
		if err := s.Compare(ctx, res.Complete, na); err != nil {
			return err
		}
	}
	if c.Searching() && len(res.Complete) > 1 {
		if err := s.Frontier(ctx, res.Complete, filepath.Join(c.Dir, "frontier.svg")); err != nil {
			// The comparison is out; a figure that cannot be drawn is
			// said, not a failed sweep.
			fmt.Fprintf(s.Log, "frontier figure: %v\n", err)
		}
	}
	return c.Outcome(s.Path, plan, res)
}
