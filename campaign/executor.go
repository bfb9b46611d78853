package campaign

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
)

// Executor is where a sweep's runs run (`sweep --executor NAME`): this
// machine one run after the other (Local), Slurm jobs (Slurm), Kubernetes
// Jobs (package campaign/kube). Every executor runs the same plan with the
// same run ids and archive directories (OUT/runs/<id>, <id>.try2, ...),
// decides what to run from the archives (complete: skipped; interrupted:
// again; failed: with RetryFailed), re-attaches after a restart to what a
// killed sweep left going, stops what it started when ctx is done
// (Result.Interrupted), and leaves each run's archive in OUT/runs before
// it reports the run done.
type Executor interface {
	// Name is the value of --executor.
	Name() string
	// Run runs the plan's runs that are to run now (Campaign.todo) and
	// returns where every run of the plan stands.
	Run(ctx context.Context, c *Campaign, p Plan, o Options) (Result, error)
	// Describe is what the executor would submit for run r writing its
	// archive to dir, for `sweep --dry-run`: a command line, a job script,
	// manifests. r's arguments are already redacted; bin is the joulebench
	// executable of the sweep.
	Describe(c *Campaign, r Run, dir, bin string) (string, error)
}

// Local is the local executor: RunLocal.
type Local struct{}

// Slurm is the Slurm executor: RunSlurm with the Slurm commands in PATH
// (Commander nil) or the given one.
type Slurm struct{ Commander Commander }

var (
	_ Executor = Local{}
	_ Executor = Slurm{}
)

// Name is "local".
func (Local) Name() string { return "local" }

// Run runs the plan with RunLocal.
func (Local) Run(ctx context.Context, c *Campaign, p Plan, o Options) (Result, error) {
	return c.RunLocal(ctx, p, o)
}

// Describe is the run's command line.
func (Local) Describe(c *Campaign, r Run, dir, bin string) (string, error) {
	return fmt.Sprintf("%s %s\n", bin, strings.Join(quoteArgs(r.Args(dir)), " ")), nil
}

// Name is "slurm".
func (Slurm) Name() string { return "slurm" }

// Run runs the plan with RunSlurm.
func (s Slurm) Run(ctx context.Context, c *Campaign, p Plan, o Options) (Result, error) {
	run := s.Commander
	if run == nil {
		run = ExecCommander
	}
	return c.RunSlurm(ctx, p, o, run)
}

// Describe is the run's sbatch script.
func (Slurm) Describe(c *Campaign, r Run, dir, bin string) (string, error) {
	jb := c.File.Slurm.Joulebench
	if jb == "" {
		jb = bin
	}
	if err := c.CheckScriptValues("the joulebench executable", jb); err != nil {
		return "", err
	}
	return "sbatch script:\n" + indent(c.JobScript(r, jb, dir), "  "), nil
}

// Executors are the executors a sweep may name, by name.
type Executors struct {
	byName map[string]Executor
}

// NewExecutors registers executors; a name given twice is an error.
func NewExecutors(ex ...Executor) (*Executors, error) {
	e := &Executors{byName: map[string]Executor{}}
	for _, x := range ex {
		if _, dup := e.byName[x.Name()]; dup {
			return nil, fmt.Errorf("campaign: executor %q registered twice", x.Name())
		}
		e.byName[x.Name()] = x
	}
	return e, nil
}

// BuiltinExecutors are the executors of this package: local and slurm.
func BuiltinExecutors() []Executor { return []Executor{Local{}, Slurm{}} }

// Names lists the registered executors, sorted.
func (e *Executors) Names() []string {
	out := make([]string, 0, len(e.byName))
	for n := range e.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the executor named name; an unknown name is an invalid
// input error listing the valid ones.
func (e *Executors) Lookup(name string) (Executor, error) {
	if x, ok := e.byName[name]; ok {
		return x, nil
	}
	return nil, exitcode.Invalidf("--executor %q: valid are %s", name, strings.Join(e.Names(), ", "))
}

// SplitSecrets moves the `run` flags that may hold a secret out of a run's
// arguments (the command line is anyone's to read): argv without them, and
// env their values as NAME=VALUE, which the run reads from its
// environment (SecretArgsEnv for the repeatable ones). An executor hands
// env to the run by a private channel: a child's environment, an sbatch
// script readable by the user alone, a Kubernetes Secret.
func SplitSecrets(args []string) (argv, env []string) { return splitSecrets(args) }

// DryRunWith writes what a sweep on ex would run: each run's id, status
// and what ex would submit (Executor.Describe), with the secrets red knows
// hidden; of a search, its first points.
func (c *Campaign) DryRunWith(w io.Writer, plan Plan, bin string, ex Executor, red *redact.Redactor) error {
	if c.Searching() {
		fmt.Fprintf(w, "campaign %s: %s search over %d combinations; the first points of each follow (the next ones depend on what they measure)\n", c.Name, c.Search.Kind, len(plan.Runs))
		plan = c.FirstPoints(plan)
	}
	fmt.Fprintf(w, "campaign %s: %d runs (%d excluded by the exclude list), executor %s\n", c.Name, len(plan.Runs), plan.Excluded, ex.Name())
	for i, r := range plan.Runs {
		as, err := c.Attempts(r)
		if err != nil {
			return err
		}
		st := Status(as)
		dir, err := c.NextDir(r)
		if err != nil {
			return err
		}
		if last, ok := Latest(as); ok && st == Complete {
			dir = last.Dir
		}
		fmt.Fprintf(w, "%3d  %s  [%s]  %s\n", i+1, r.ID, st, r.Describe())
		rr := red.WithArgv(append(r.Args(dir), c.nodeSecretArgs()...)) // the agents' and the parts' secrets too
		shown := r
		shown.Config.Args = rr.Argv(r.Config.Args)
		d, err := ex.Describe(c, shown, dir, bin)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
		fmt.Fprint(w, indent(rr.String(d), "     "))
	}
	return nil
}

// SweepWith runs the plan on ex (a search campaign searches each
// combination's load), saying what it does on log: the runs, the summary
// and each failed run.
func (c *Campaign) SweepWith(ctx context.Context, plan Plan, ex Executor, opts Options, log io.Writer) (Result, error) {
	run := func(ctx context.Context, p Plan) (Result, error) { return ex.Run(ctx, c, p, opts) }
	var res Result
	var err error
	if c.Searching() {
		fmt.Fprintf(log, "campaign %s: %s search over %d combinations (%d excluded), executor %s, archives in %s\n", c.Name, c.Search.Kind, len(plan.Runs), plan.Excluded, ex.Name(), c.RunsDir())
		res, _, err = c.RunSearch(ctx, plan, opts, run)
	} else {
		fmt.Fprintf(log, "campaign %s: %d runs (%d excluded), executor %s, archives in %s\n", c.Name, len(plan.Runs), plan.Excluded, ex.Name(), c.RunsDir())
		res, err = run(ctx, plan)
	}
	if err != nil {
		return res, err
	}
	fmt.Fprintf(log, "campaign %s: %s\n", c.Name, res.Summary)
	for _, f := range res.Failed {
		fmt.Fprintf(log, "failed: %s\n", f)
	}
	return res, nil
}

// ToRunNow lists the runs of p an executor starts now, and says on
// o.Log those it skips: pending and interrupted runs, failed ones with
// RetryFailed, none in skip (runs an executor already follows).
func (c *Campaign) ToRunNow(p Plan, o Options, skip map[string]bool) ([]Run, error) {
	o.defaults()
	return c.todo(p, o, skip)
}

// Collect reads every run's archives into a Result; running lists the
// runs an executor still follows.
func (c *Campaign) Collect(p Plan, running map[string]bool, o Options) (Result, error) {
	o.defaults()
	return c.collect(p, running, o)
}

// Unavailable is an executor this build lacks (kubernetes in the default
// binary, whose client is in joulebench-kube): it is listed under name,
// and a sweep on it, dry run included, is refused as invalid input with
// why.
func Unavailable(name string, why error) Executor { return unavailable{name, why} }

type unavailable struct {
	name string
	why  error
}

func (u unavailable) Name() string { return u.name }

func (u unavailable) Run(context.Context, *Campaign, Plan, Options) (Result, error) {
	return Result{}, exitcode.Invalidf("--executor %s: %w", u.name, u.why)
}

func (u unavailable) Describe(*Campaign, Run, string, string) (string, error) {
	return "", exitcode.Invalidf("--executor %s: %w", u.name, u.why)
}
