package profiles_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// TestFormalRequestsSucceededReason: with no formal request at all, each
// built-in profile's formal_requests_succeeded fails saying that none was
// sent, never "0 of 0 formal requests failed"; with one failed of the
// sample run's formal requests it counts them (1 failed of all of them).
func TestFormalRequestsSucceededReason(t *testing.T) {
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5", "asiai"} {
		t.Run(prof, func(t *testing.T) {
			src, err := profiles.Read(prof)
			if err != nil {
				t.Fatal(err)
			}
			l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			load := func() *record.Run {
				if prof == "asiai" {
					return asiaiRun()
				}
				run, err := archive.Load("../archive/testdata/sample-run")
				if err != nil {
					t.Fatal(err)
				}
				return run
			}
			run := load()
			run.Requests = slices.DeleteFunc(run.Requests, func(r record.Request) bool { return r.Phase == "formal" })
			res, _ := workflow.Evaluate(context.Background(), l, run)
			if res == nil {
				t.Fatal("no results")
			}
			r := res.Values["formal_requests_succeeded"]
			if r.Passed == nil || *r.Passed || !strings.Contains(r.Message, "no formal request was sent") || strings.Contains(r.Message, "0 of 0") {
				t.Errorf("formal_requests_succeeded without formal requests = %+v, want a failure saying none was sent", r)
			}

			// Every formal request failed: n of n (n counted here from the run).
			run = load()
			n := 0
			for i := range run.Requests {
				if run.Requests[i].Phase == "formal" {
					run.Requests[i].OK, run.Requests[i].Error = false, "test"
					n++
				}
			}
			res, _ = workflow.Evaluate(context.Background(), l, run)
			if res == nil {
				t.Fatal("no results")
			}
			want := strconv.Itoa(n) + " of " + strconv.Itoa(n) + " formal requests failed"
			if r := res.Values["formal_requests_succeeded"]; r.Passed == nil || *r.Passed || !strings.Contains(r.Message, want) {
				t.Errorf("formal_requests_succeeded with every formal request failed = %+v, want %q", r, want)
			}
		})
	}
}
