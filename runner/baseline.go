package runner

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/workflow"
)

// Baseline is a baseline run evaluated with the profile under test: the
// values a run is gated on (baseline.METRIC in its checks).
type Baseline struct {
	Dir     string
	Run     *record.Run
	Results *record.Results
	Values  *metricdefs.Baseline
}

// LoadBaseline evaluates the profile l on the baseline archive dir. It
// refuses a baseline that is not comparable with cur unless force.
func LoadBaseline(ctx context.Context, dir string, l *workflow.Loaded, cur record.Meta, force bool) (*Baseline, error) {
	run, err := archive.LoadData(dir) // evaluated again: its results.json is not read
	if err != nil {
		return nil, WithCode(CodeInvalid, fmt.Errorf("--baseline: %w", err))
	}
	if err := comparable(cur, run.Meta, l.Profile.Name); err != nil && !force {
		return nil, WithCode(CodeInvalid, fmt.Errorf("--baseline %s is not comparable: %w (--baseline-force compares anyway)", dir, err))
	}
	res, evalErr := workflow.Evaluate(ctx, l, run)
	if res == nil {
		return nil, WithCode(CodeInvalid, fmt.Errorf("--baseline %s: %w", dir, evalErr))
	}
	return &Baseline{Dir: dir, Run: run, Results: res, Values: metricdefs.NewBaseline(res)}, nil
}

// comparable names the first field in which a baseline run differs from
// the run under test: a gate across models, engines, request sets or
// profiles would compare different things.
func comparable(cur, base record.Meta, profile string) error {
	fields := []struct{ name, cur, base string }{
		{"profile", profile, base.Profile.Name},
		{"engine", cur.Engine.Kind, base.Engine.Kind},
		{"model", cur.Engine.Model, base.Engine.Model},
		{"request set", cur.RequestSet.Source, base.RequestSet.Source},
		{"request set sha256", cur.RequestSet.SHA256, base.RequestSet.SHA256},
		{"request count", fmt.Sprint(cur.RequestSet.Count), fmt.Sprint(base.RequestSet.Count)},
	}
	for _, f := range fields {
		if f.cur != f.base {
			return fmt.Errorf("%s differs: %q here, %q in the baseline", f.name, f.cur, f.base)
		}
	}
	return nil
}
