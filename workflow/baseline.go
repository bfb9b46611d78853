package workflow

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/metricdefs"
)

// EvaluateBaseline evaluates a loaded profile over a run with `baseline`
// bound to base (the same profile's results on a baseline run; nil: every
// formula that reads it is not applicable).
func EvaluateBaseline(ctx context.Context, l *Loaded, run *record.Run, base *metricdefs.Baseline) (*record.Results, error) {
	data, err := metricdefs.NewData(run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Dir, err)
	}
	data.Baseline = base
	res, err := l.Program.Evaluate(ctx, data, l.Params)
	if res != nil {
		res.Profile = l.Ref
	}
	return res, err
}
