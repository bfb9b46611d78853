package runner

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A run of several ends with the engines side by side (the comparison of
// the parent directory) and the first failed run's error before the
// comparison's; one run shows nothing more.
func TestResultShow(t *testing.T) {
	failed, cmpErr := errors.New("engine b failed"), errors.New("a formula could not be evaluated")
	for _, tc := range []struct {
		name     string
		r        Result
		cmp      error
		want     error
		compared string
		header   bool
	}{
		{"one run", Result{}, nil, nil, "", false},
		{"one run failed", Result{Errs: []error{failed, cmpErr}}, nil, failed, "", false},
		{"engines", Result{Parent: "runs/p"}, nil, nil, "runs/p", true},
		{"engines, comparison fails", Result{Parent: "runs/p"}, cmpErr, cmpErr, "runs/p", true},
		{"engines, one failed", Result{Parent: "runs/p", Errs: []error{failed}}, cmpErr, failed, "runs/p", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			compared := ""
			err := tc.r.Show(&out, "table", func(parent string) error { compared = parent; return tc.cmp })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || compared != tc.compared ||
				strings.Contains(out.String(), "== engines side by side (runs/p)") != tc.header {
				t.Errorf("error %v, compared %q, output %q", err, compared, out.String())
			}
		})
	}
}
