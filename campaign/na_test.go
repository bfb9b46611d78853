package campaign

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/compare"
)

// The exclude list's combinations are compare's n/a rows, once each
// whatever the repetitions. good excludes {engine: sglang, model: big};
// warmup_requests takes 4 and 8: two combinations.
func TestExcludedCombinations(t *testing.T) {
	c := load(t, good)
	na := c.ExcludedCombinations()
	if len(na) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(na), na)
	}
	for i, w := range []string{"4", "8"} {
		r := na[i]
		if r.Engine != "sglang" || r.Model != "org/big" || r.Scenario != "chat" || len(r.Setting) != 1 ||
			r.Setting[0] != (compare.FieldValue{Field: "warmup_requests", Value: w}) ||
			r.Reason != "not applicable: excluded by the campaign (exclude[0]: engine=sglang model=big)" {
			t.Errorf("row %d = %+v", i, r)
		}
	}
}

// A run that failed because its prompts overflow the model's context is
// not applicable: not counted as failed, listed as an n/a row, skipped on
// resume like a complete run. Another failure stays a failure.
func TestNotApplicableRunIsNoFailure(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}, {id: b}]\n  scenario: [{name: long, dataset: long}]\n")
	p := c.Expand()
	rules, err := compare.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{NotApplicable: rules.NotApplicableReason}
	o.defaults()
	write := func(r Run, reason string) {
		dir := c.attemptDir(r, 1)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"format_version": 1, "run_id": r.ID, "status": "failed", "reason": reason,
			"started_at": 1, "ended_at": 2, "stages": []any{}, "events": []any{}})
		if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(p.Runs[0], "warm-up: 8 of 8 requests failed: http 400: request (9000 tokens) exceeds the available context size (2048 tokens)")
	write(p.Runs[1], "engine exited during the formal stage")
	res, err := c.collect(p, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Failed != 1 || res.Summary.NotApplicable != 1 || len(res.Failed) != 1 || len(res.NotApplicable) != 1 {
		t.Fatalf("result %+v", res)
	}
	na := res.NotApplicable[0]
	if na.Model != "a" || na.Scenario != "long" || na.RunID != p.Runs[0].ID || !strings.Contains(na.Reason, "do not fit the model's context") {
		t.Errorf("n/a row %+v", na)
	}
	if s := res.Summary.String(); s != "0 done, 0 running, 0 left, 1 failed, 1 not applicable" {
		t.Errorf("summary %q", s)
	}
	var log strings.Builder
	o.Log = &log
	todo, err := c.todo(p, o, nil)
	if err != nil || len(todo) != 0 || !strings.Contains(log.String(), "skip "+p.Runs[0].ID+": not applicable") {
		t.Errorf("todo %v, %v; log:\n%s", todo, err, log.String())
	}
	// Without the classifier it is a failure, as before.
	if res, _ := c.collect(p, nil, Options{}); res.Summary.Failed != 2 {
		t.Errorf("no classifier: %+v", res.Summary)
	}
}
