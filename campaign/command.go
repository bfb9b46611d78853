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

// DryRun writes what a sweep on a built-in executor (local or slurm)
// would run: DryRunWith.
func (c *Campaign) DryRun(w io.Writer, plan Plan, bin, executor string, red *redact.Redactor) error {
	ex, err := builtinExecutor(executor)
	if err != nil {
		return err
	}
	return c.DryRunWith(w, plan, bin, ex, red)
}

func builtinExecutor(name string) (Executor, error) {
	if err := CheckExecutor(name); err != nil {
		return nil, err
	}
	if name == "slurm" {
		return Slurm{}, nil
	}
	return Local{}, nil
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

// Sweep runs the plan on a built-in executor (local or slurm): SweepWith.
func (c *Campaign) Sweep(ctx context.Context, plan Plan, executor string, opts Options, log io.Writer) (Result, error) {
	ex, err := builtinExecutor(executor)
	if err != nil {
		return Result{}, err
	}
	return c.SweepWith(ctx, plan, ex, opts, log)
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
