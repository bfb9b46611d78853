package analysis

import (
	"context"
	"fmt"
	"io"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/report"
)

// EstimateInput is what estimate is asked: the run archive Dir evaluated
// with Profile ("": its own) and Sets, the request counts N
// (comma-separated, --requests), the comparison profile Rules (a built-in
// name or a file) and the output Format.
type EstimateInput struct {
	Dir, Profile string
	Sets         []string
	Requests     string
	Rules        string
	Format       string
}

// Estimate evaluates the run and writes to w the comparison profile's
// lifecycle estimate for each N (compare.Profile.EstimateRun). Formulas
// that fail on the run go to warn (when set) and the estimate goes on;
// the error is invalid input, Eval when the estimate cannot be made, or
// Checks when a fail or exclude check of the run did not pass.
func (p Profiles) Estimate(ctx context.Context, w io.Writer, in EstimateInput, warn func(dir string, evalErr error)) error {
	if err := report.CheckFormat(in.Format); err != nil {
		return exitcode.With(exitcode.Invalid, err)
	}
	ns, err := compare.ParseCounts(in.Requests)
	if err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("--requests: %w", err))
	}
	prof, err := compare.ReadProfile(in.Rules)
	if err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("invalid comparison profile:\n%w", err))
	}
	e, err := p.Evaluate(ctx, in.Dir, in.Profile, in.Sets)
	if err != nil {
		return exitcode.Keep(err, "run %s", in.Dir)
	}
	if e.EvalErr != nil && warn != nil {
		warn(in.Dir, e.EvalErr)
	}
	est, err := prof.EstimateRun(compare.Run{Dir: in.Dir, Meta: e.Run.Meta, Results: e.Results}, ns)
	if err != nil {
		return exitcode.With(exitcode.Eval, err)
	}
	if err := compare.RenderEstimate(w, est, in.Format); err != nil {
		return err
	}
	return ChecksOutcome(e.Results)
}
