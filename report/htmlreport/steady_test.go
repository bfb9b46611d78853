package htmlreport

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// The steady-state note reads the window, cv_max and the span's start
// from the steady_state() result (what the run's profile searched with),
// not from parameters named window and cv_max.
func TestSteadyNote(t *testing.T) {
	steady := func(v map[string]any) *record.Results {
		return &record.Results{Values: map[string]record.Result{"steady": {Kind: "derived", Value: v}}}
	}
	reached := func(spanStart string) map[string]any {
		return map[string]any{"reached": true, "start_index": int64(51), "end_index": int64(600), "windows": int64(2),
			"window_cvs": []any{0.0125, 0.02}, "window": int64(250), "cv_max": 0.05, "span_start": spanStart}
	}
	cases := []struct {
		name string
		res  *record.Results
		want string
	}{
		{"first completion", steady(reached("first_completion")),
			"Steady state from request 51 to 600 in completion order: 2 windows of 250 requests, CV of each window 0.01250, 0.02000 (threshold 0.05); " +
				"the span starts at the completion of request 51 (steady_span_start first_completion)."},
		{"earliest first token", steady(reached("earliest_first_token")),
			"Steady state from request 51 to 600 in completion order: 2 windows of 250 requests, CV of each window 0.01250, 0.02000 (threshold 0.05); " +
				"the span starts at the earliest first token among the requests of the first window (steady_span_start earliest_first_token)."},
		{"not reached", steady(map[string]any{"reached": false, "reason": "only 7 requests"}), "Steady state not reached: only 7 requests"},
		{"no search", &record.Results{Values: map[string]record.Result{}}, ""},
	}
	for _, c := range cases {
		if got := steadyNote(c.res); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
