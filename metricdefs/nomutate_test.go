package metricdefs

import (
	"context"
	"slices"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// A derived list held compactly (compact.go) reaches the built-ins as
// the very []float64 or []*record.Request the later formulas read
// (toFloats and toRequests pass them through): no built-in may sort or
// write the list it is given. Each built-in that takes a list of numbers
// or of requests is called here on one out of order (3, 1, 2, 5, 4;
// builtinRun's r2 before r1, not in completion order) and the list must
// be as it was.
func TestBuiltinsLeaveListsAsGiven(t *testing.T) {
	d := builtinRun(t)
	ctx := withData(context.Background(), d)
	xs := []float64{3, 1, 2, 5, 4}
	ys := []float64{1, 2, 3, 4, 6}
	reqs := []*record.Request{d.Requests[1], d.Requests[0]}
	wantXs, wantYs, wantReqs := slices.Clone(xs), slices.Clone(ys), slices.Clone(reqs)
	calls := map[string][]any{
		"percentile": {xs, 50.0}, "median": {xs}, "mean": {xs}, "std": {xs}, "sample_std": {xs},
		"cv": {xs}, "mean_ci95": {xs}, "pooled_std": {xs, []any{"a", "a", "b", "b", "b"}}, "spearman": {xs, ys},
		"attribute": {ctx, reqs, "trapz"}, "attribute_resident": {ctx, reqs, "trapz"},
		"requests_in": {ctx, reqs, 2.0, 8.0}, "tokens_in": {ctx, reqs, 2.0, 8.0},
		"phase_energy": {ctx, reqs, 2.0, 8.0, "trapz"}, "itl": {reqs},
		"steady_state": {ctx, reqs, 2.0, 1.0, 1.0, 8.0, "trapz"},
	}
	seen := map[string]bool{}
	for _, def := range builtinDefs() {
		args, ok := calls[def.Name]
		if !ok {
			continue
		}
		seen[def.Name] = true
		if _, err := def.fn(args...); err != nil {
			t.Errorf("%s: %v", def.Name, err)
		}
		if !slices.Equal(xs, wantXs) || !slices.Equal(ys, wantYs) || !slices.Equal(reqs, wantReqs) {
			t.Errorf("%s changed the list it was given: %v %v %v", def.Name, xs, ys, reqs)
			copy(xs, wantXs)
			copy(ys, wantYs)
			copy(reqs, wantReqs)
		}
	}
	for name := range calls {
		if !seen[name] {
			t.Errorf("no built-in %s", name)
		}
	}
	// The lazy ITL (itl_lazy.go) reads the requests too.
	if _, err := measure.NewITLValues(reqs, 50); err != nil {
		t.Errorf("lazy ITL: %v", err)
	}
	if !slices.Equal(reqs, wantReqs) {
		t.Errorf("the lazy ITL changed the requests: %v", reqs)
	}
}
