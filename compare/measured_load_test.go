package compare

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// A run of joulebench measure is labelled by what generated its load (the
// command's program, or the window of live traffic), not by the profile's
// load parameters it never used (mode=unlimited).
func TestMeasuredRunLoadIsItsCommand(t *testing.T) {
	p := builtin(t)
	run := func(id string, mi *record.MeasureInfo) Run {
		r := mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: 0.2, full: 0.2, tokens: 100})
		r.Meta.Measure = mi
		return r
	}
	runs := []Run{
		run("hey", &record.MeasureInfo{Load: "command", Command: []string{"/usr/local/bin/hey", "-n", "24", "http://127.0.0.1:8080/v1/completions"}}),
		run("live", &record.MeasureInfo{Load: "live traffic over 30s", DurationS: 30}),
	}
	rep := p.Compare(runs)
	want := map[string]string{"hey": "cmd hey · default", "live": "live traffic over 30s · default"}
	for _, r := range rep.Runs {
		if w, ok := want[r.RunID]; !ok || r.Label != w {
			t.Errorf("run %s: label %q, want %q", r.RunID, r.Label, w)
		}
		for _, fv := range r.Load {
			if fv.Field == "parameters.mode" {
				t.Errorf("run %s shows the profile's load parameter %+v", r.RunID, fv)
			}
		}
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("runs %+v", rep.Runs)
	}
}
