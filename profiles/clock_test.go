package profiles_test

import (
	"context"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// power_clocks_aligned: the sample run read through an agent on another
// node whose clock offset moved between the start and the end. Not
// applicable without telemetry.clock_sync; a drift of 0.02 s (≤ 0.05 s +
// 0.001 + 0.001 s) passes; 0.1 s (> 0.05 + 0.001 + 0.002 = 0.053 s)
// excludes the run, unless clock_drift_max_s is set to 0.2; an entry
// without its end excludes it (fails closed).
func TestClockAlignedCheck(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	entry := func(end, endRTT *float64) []record.ClockSync {
		return []record.ClockSync{{Source: "agent http://node1:7070", Host: "node1", StartOffsetS: 2.5, StartRTTS: 0.002, EndOffsetS: end, EndRTTS: endRTT, Probes: 8}}
	}
	cases := []struct {
		name    string
		cs      []record.ClockSync
		set     map[string]string
		na      bool
		passed  bool
		message string
	}{
		{name: "no clock_sync", na: true},
		{name: "drift 0.02 s", cs: entry(f(2.52), f(0.002)), passed: true},
		{name: "drift 0.1 s", cs: entry(f(2.6), f(0.004)), message: "agent http://node1:7070 (host node1): clock offset drifted 0.100000 s between start (2.500000 s) and end (2.600000 s); bound 0.050000 s plus the estimates' uncertainty 0.003000 s"},
		{name: "drift 0.1 s, bound 0.2 s", cs: entry(f(2.6), f(0.004)), set: map[string]string{"clock_drift_max_s": "0.2"}, passed: true},
		{name: "no end", cs: entry(nil, nil), message: "no end offset"},
	}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		src, err := profiles.Read(prof)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(prof+"/"+c.name, func(t *testing.T) {
				l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry(), Overrides: c.set})
				if err != nil {
					t.Fatal(err)
				}
				run, err := archive.Load("../archive/testdata/sample-run")
				if err != nil {
					t.Fatal(err)
				}
				run.Meta.Telemetry.ClockSync = c.cs
				res, _ := workflow.Evaluate(context.Background(), l, run)
				if res == nil {
					t.Fatal("no results")
				}
				r := res.Values["power_clocks_aligned"]
				if c.na {
					if r.Passed != nil || !strings.Contains(r.Note, "every power source reads the run clock") {
						t.Errorf("check %+v, want not applicable", r)
					}
					return
				}
				if r.Passed == nil || *r.Passed != c.passed || !strings.Contains(r.Message, c.message) {
					t.Fatalf("check %+v, want passed %v with %q", r, c.passed, c.message)
				}
				if excluded := res.Excluded && strings.Contains(res.ExcludeReason, "power_clocks_aligned"); excluded == c.passed {
					t.Errorf("excluded %v (%q), want %v", res.Excluded, res.ExcludeReason, !c.passed)
				}
			})
		}
	}
}
