package campaign

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
)

// Checker reads and checks campaign files as `joulebench sweep` and
// `validate` do: the schema and run flags (Loader), a plan with at least
// one run, and every run's profile with its --set values (CheckProfile)
// before anything starts. Its errors carry their exit code
// (internal/exitcode).
type Checker struct {
	Loader Loader
	// CheckProfile loads a run's profile with its --set values the way
	// run will; nil checks nothing.
	CheckProfile func(profile string, sets []string) error
}

// Open reads the campaign file path and expands and checks its plan.
func (k Checker) Open(path string) (*Campaign, Plan, error) {
	c, err := k.Loader.ReadFile(path)
	if err != nil {
		return nil, Plan{}, exitcode.With(exitcode.Invalid, fmt.Errorf("invalid campaign:\n%w", err))
	}
	plan, err := k.check(c, path)
	return c, plan, err
}

// Validate checks path when it is a campaign file (ok true) and says what
// it holds; a file that is no campaign (ok false) is left to the profile
// reader, which says what is wrong with it.
func (k Checker) Validate(path string) (summary string, ok bool, err error) {
	src, err := boundedfile.Read(path, "campaign file", boundedfile.MaxProfileBytes)
	if err != nil || !LooksLikeCampaign(src) {
		return "", false, nil
	}
	c, err := k.Loader.Load(src, path)
	if err != nil {
		return "", true, exitcode.With(exitcode.Invalid, fmt.Errorf("invalid campaign:\n%w", err))
	}
	plan, err := k.check(c, path)
	if err != nil {
		return "", true, err
	}
	return fmt.Sprintf("%s: campaign %s is valid: %d runs (%d excluded), profile %s", path, c.Name, len(plan.Runs), plan.Excluded, c.Profile), true, nil
}

// check expands c and checks each distinct (profile, --set) of the runs
// (of a search: its first points) the way run will, so that an unknown
// parameter or a bad value is reported before the first run starts.
func (k Checker) check(c *Campaign, path string) (Plan, error) {
	plan := c.Expand()
	if len(plan.Runs) == 0 {
		return plan, exitcode.Invalidf("campaign %s: every combination is excluded: nothing to run", path)
	}
	if k.CheckProfile == nil {
		return plan, nil
	}
	seen := map[string]bool{}
	for _, r := range c.CheckedPlan(plan).Runs {
		sets := SetsOf(r.Config.Args)
		key := r.Config.Profile + "\x00" + strings.Join(sets, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		if err := k.CheckProfile(r.Config.Profile, sets); err != nil {
			return plan, exitcode.With(exitcode.Invalid, fmt.Errorf("run %s: %w", r.ID, err))
		}
	}
	return plan, nil
}

// CheckedPlan is the plan whose profiles are checked: a search's points
// (the synchronous, throughput and one rate point of each combination,
// or its slo bounds) for a campaign with a search section.
func (c *Campaign) CheckedPlan(plan Plan) Plan {
	if !c.Searching() {
		return plan
	}
	loads := []LoadPoint{inFlightPoint(1), allAtOncePoint(), {Mode: c.Search.RateMode, Rate: 1}}
	if c.Search.Kind == SearchSLO && c.Search.Over == overConcurrency {
		loads = []LoadPoint{inFlightPoint(int(c.Search.Low)), inFlightPoint(int(c.Search.High))}
	}
	return c.points(plan, loads)
}

// FirstPoints are the points every search of the campaign starts with:
// concurrency 1 and all at once (sweep), or the low and high bounds (slo).
func (c *Campaign) FirstPoints(plan Plan) Plan {
	loads := []LoadPoint{inFlightPoint(1), allAtOncePoint()}
	if c.Search.Kind == SearchSLO {
		if c.Search.Over == overRate {
			loads = []LoadPoint{{Mode: c.Search.RateMode, Rate: c.Search.Low}, {Mode: c.Search.RateMode, Rate: c.Search.High}}
		} else {
			loads = []LoadPoint{inFlightPoint(int(c.Search.Low)), inFlightPoint(int(c.Search.High))}
		}
	}
	return c.points(plan, loads)
}

// points is each run of plan at each load.
func (c *Campaign) points(plan Plan, loads []LoadPoint) Plan {
	var out Plan
	for _, r := range plan.Runs {
		for _, l := range loads {
			out.Runs = append(out.Runs, c.PointRun(r, l))
		}
	}
	return out
}

// SetsOf returns the --set values of a run's arguments.
func SetsOf(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--set" && i+1 < len(args):
			out = append(out, args[i+1])
			i++
		case strings.HasPrefix(args[i], "--set="):
			out = append(out, strings.TrimPrefix(args[i], "--set="))
		}
	}
	return out
}

// CheckExecutor accepts where a sweep's runs can run: local and slurm.
func CheckExecutor(executor string) error {
	if executor == "local" || executor == "slurm" {
		return nil
	}
	return exitcode.Invalidf("--executor %q: valid are local, slurm", executor)
}

// DryRun writes what a sweep would run: each run's id, status and
// command line (local) or sbatch script (slurm), with the secrets red
// knows hidden (the sbatch files submitted keep them); of a search, its
// first points.
func (c *Campaign) DryRun(w io.Writer, plan Plan, bin, executor string, red *redact.Redactor) error {
	if c.Searching() {
		fmt.Fprintf(w, "campaign %s: %s search over %d combinations; the first points of each follow (the next ones depend on what they measure)\n", c.Name, c.Search.Kind, len(plan.Runs))
		plan = c.FirstPoints(plan)
	}
	fmt.Fprintf(w, "campaign %s: %d runs (%d excluded by the exclude list), executor %s\n", c.Name, len(plan.Runs), plan.Excluded, executor)
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
		rr := red.WithArgv(append(r.Args(dir), c.nodeAgentArgs()...))
		shown := r
		shown.Config.Args = rr.Argv(r.Config.Args)
		if executor == "slurm" {
			jb := c.Slurm.Joulebench
			if jb == "" {
				jb = bin
			}
			fmt.Fprintf(w, "     sbatch script:\n%s", indent(rr.String(c.JobScript(shown, jb, dir)), "       "))
			continue
		}
		fmt.Fprintf(w, "     %s %s\n", bin, strings.Join(quoteArgs(shown.Args(dir)), " "))
	}
	return nil
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(pre + l)
		}
	}
	return b.String()
}

// quoteArgs quotes each argument a POSIX shell would split or expand.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if s == "" || strings.ContainsAny(s, " \t'\"$\\;&|<>*?()[]{}") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return out
}

// Sweep runs the plan on executor (local or slurm; a search campaign
// searches each combination's load), saying what it does on log: the
// runs, the summary and each failed run.
func (c *Campaign) Sweep(ctx context.Context, plan Plan, executor string, opts Options, log io.Writer) (Result, error) {
	exec := func(ctx context.Context, p Plan) (Result, error) {
		if executor == "slurm" {
			return c.RunSlurm(ctx, p, opts, ExecCommander)
		}
		return c.RunLocal(ctx, p, opts)
	}
	var res Result
	var err error
	if c.Searching() {
		fmt.Fprintf(log, "campaign %s: %s search over %d combinations (%d excluded), executor %s, archives in %s\n", c.Name, c.Search.Kind, len(plan.Runs), plan.Excluded, executor, c.RunsDir())
		res, _, err = c.RunSearch(ctx, plan, opts, exec)
	} else {
		fmt.Fprintf(log, "campaign %s: %d runs (%d excluded), executor %s, archives in %s\n", c.Name, len(plan.Runs), plan.Excluded, executor, c.RunsDir())
		res, err = exec(ctx, plan)
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

// Outcome is the error a sweep of path ends with once its comparison is
// shown: runs that failed or have no complete archive. A search's failed
// point is one of its outcomes (an overloaded server), not a failed sweep.
func (c *Campaign) Outcome(path string, plan Plan, res Result) error {
	if c.Searching() {
		return nil
	}
	if len(res.Failed) > 0 {
		return exitcode.With(exitcode.Failure, fmt.Errorf("sweep %s: %d of %d runs failed (--retry-failed runs them again)", path, len(res.Failed), len(plan.Runs)))
	}
	if res.Summary.Left > 0 {
		return exitcode.With(exitcode.Failure, fmt.Errorf("sweep %s: %d runs have no complete archive", path, res.Summary.Left))
	}
	return nil
}
