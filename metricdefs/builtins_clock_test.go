package metricdefs

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// clock_audit holds each source's drift, |end − start offset|, to
// max_drift_s plus half of each round trip (Mapping.CheckDrift), and
// fails a source without its end.
func TestClockAudit(t *testing.T) {
	agent := func(start, startRTT float64, end, endRTT *float64) record.ClockSync {
		return record.ClockSync{Source: "agent http://node1:7070", Host: "node1", StartOffsetS: start, StartRTTS: startRTT, EndOffsetS: end, EndRTTS: endRTT, Probes: 8}
	}
	cases := []struct {
		name     string
		cs       []record.ClockSync
		maxDrift float64
		valid    bool
		drift    float64
		reason   string
	}{
		{"no source on another clock", nil, 0.05, true, 0, ""},
		// 2.52 − 2.5 = 0.02 ≤ 0.05 + 0.001 + 0.001.
		{"within the bound", []record.ClockSync{agent(2.5, 0.002, ptr(2.52), ptr(0.002))}, 0.05, true, 0.02, ""},
		// 2.6 − 2.5 = 0.1 > 0.05 + 0.001 + 0.002 = 0.053.
		{"drift beyond", []record.ClockSync{agent(2.5, 0.002, ptr(2.6), ptr(0.004))}, 0.05, false, 0.1, "drifted 0.100000 s"},
		// The profile's bound is wired: 0.1 ≤ 0.2 + 0.003.
		{"a larger bound", []record.ClockSync{agent(2.5, 0.002, ptr(2.6), ptr(0.004))}, 0.2, true, 0.1, ""},
		// 2.4475 − 2.5 = −0.0525: 0.0525 ≤ 0.05 + 0.003, explained by the
		// estimates' uncertainty.
		{"within the uncertainty", []record.ClockSync{agent(2.5, 0.002, ptr(2.4475), ptr(0.004))}, 0.05, true, 0.0525, ""},
		{"no end: fails closed", []record.ClockSync{agent(2.5, 0.002, nil, nil)}, 0.05, false, 0, "no end offset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewData(&record.Run{Meta: record.Meta{Telemetry: record.TelemetryInfo{Source: "agent", ClockSync: c.cs}}})
			if err != nil {
				t.Fatal(err)
			}
			prog, errs := Compile(Spec{Defs: []Def{
				{Name: "clocks", Kind: KindDerived, Expr: "clock_audit(" + strconv.FormatFloat(c.maxDrift, 'g', -1, 64) + ")"},
				{Name: "clocks_aligned", Kind: KindCheck, Expr: "clocks.valid", Detail: `join(clocks.reasons, "; ")`, Severity: SeverityExclude},
				{Name: "drift", Kind: KindMetric, Expr: "clocks.max_drift_s"},
			}})
			if len(errs) > 0 {
				t.Fatalf("compile: %v", errs)
			}
			res, err := prog.Evaluate(context.Background(), d, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Values["clocks_aligned"]
			if r.Passed == nil || *r.Passed != c.valid || !strings.Contains(r.Message, c.reason) {
				t.Errorf("check %+v, want passed %v with %q", r, c.valid, c.reason)
			}
			if got, _ := res.Values["drift"].Value.(float64); math.Abs(got-c.drift) > 1e-12 {
				t.Errorf("max drift %v, want %v", got, c.drift)
			}
		})
	}
}
