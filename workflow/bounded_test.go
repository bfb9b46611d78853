package workflow_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// A first token read together with later data has a time that is only an
// upper bound (archive fields first_token_bounded, first_token_bound_s):
// both benchmark profiles count them (metric first_tokens_bounded) and warn
// (check first_token_times_exact) with the widest bound. The sample run's
// requests are all exact; two successful formal ones are marked bounded,
// by 12 ms and 30 ms, and one failed formal one by 50 ms (not counted:
// the check is about the successful requests whose TTFT is reported).
func TestBoundedFirstTokens(t *testing.T) {
	for _, name := range []string{"benchmark-1.0", "benchmark-1.5"} {
		t.Run(name, func(t *testing.T) {
			src, err := profiles.Read(name)
			if err != nil {
				t.Fatal(err)
			}
			l, err := workflow.Load(src, name+".yaml", workflow.Options{Registry: steps.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			run, err := archive.Load("../archive/testdata/sample-run")
			if err != nil {
				t.Fatal(err)
			}
			exact, err := workflow.Evaluate(context.Background(), l, run)
			if err != nil {
				t.Fatal(err)
			}
			if v := exact.Values["first_tokens_bounded"].Value; v != 0 && v != int64(0) && v != 0.0 {
				t.Errorf("exact run: first_tokens_bounded = %v, want 0", v)
			}
			if c := exact.Values["first_token_times_exact"]; c.Passed == nil || !*c.Passed {
				t.Errorf("exact run: check %+v, want passed", c)
			}

			var ok, marked int
			bounds := []float64{0.012, 0.030}
			failedMarked := false
			for i := range run.Requests {
				r := &run.Requests[i]
				if r.Phase != "formal" {
					continue
				}
				switch {
				case r.OK:
					ok++
					if marked < len(bounds) {
						r.FirstTokenBounded, r.FirstTokenBoundS = true, bounds[marked]
						marked++
					}
				case !failedMarked:
					r.FirstTokenBounded, r.FirstTokenBoundS = true, 0.050
					failedMarked = true
				}
			}
			if marked != 2 {
				t.Fatalf("the sample run has %d successful formal requests, want at least 2", marked)
			}
			res, err := workflow.Evaluate(context.Background(), l, run)
			if err != nil {
				t.Fatal(err)
			}
			if v := res.Values["first_tokens_bounded"].Value; v != 2 && v != int64(2) && v != 2.0 {
				t.Errorf("first_tokens_bounded = %v (%T), want 2", v, v)
			}
			c := res.Values["first_token_times_exact"]
			if c.Passed == nil || *c.Passed || c.Severity != "warn" {
				t.Fatalf("check %+v, want failed, severity warn", c)
			}
			// 2 of the successful formal requests; widest bound 30 ms.
			want := "2 of " + strconv.Itoa(ok) + ", widest bound 30 ms"
			if !strings.Contains(c.Note+" "+c.Message, want) {
				t.Errorf("note %q message %q, want %q in them", c.Note, c.Message, want)
			}
		})
	}
}
