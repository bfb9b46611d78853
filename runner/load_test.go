package runner

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestMapLoadFlags: each of vLLM bench serve's load flags becomes its
// profile parameter; the mode follows the rate unless --set gives it.
func TestMapLoadFlags(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		sets []string
		v    LoadOptions
		want []string
	}{
		{"rate is poisson", nil, LoadOptions{Rate: 4, RateSet: true}, []string{"rate=4", "mode=poisson"}},
		{"rate and burstiness is gamma", nil, LoadOptions{Rate: 4, RateSet: true, Burstiness: 0.5, BurstinessSet: true},
			[]string{"rate=4", "mode=gamma", "burstiness=0.5"}},
		{"burstiness 1 is poisson", nil, LoadOptions{Rate: 4, RateSet: true, Burstiness: 1, BurstinessSet: true},
			[]string{"rate=4", "mode=poisson", "burstiness=1"}},
		{"a mode given wins", []string{"mode=constant"}, LoadOptions{Rate: 2.5, RateSet: true}, []string{"mode=constant", "rate=2.5"}},
		{"inf is unlimited", nil, LoadOptions{Rate: math.Inf(1), RateSet: true}, []string{"mode=unlimited"}},
		{"max concurrency alone", nil, LoadOptions{MaxConcurrency: 16, MaxConcurrencySet: true}, []string{"max_concurrency=16"}},
		{"num prompts", []string{"x=1"}, LoadOptions{NumPrompts: 200, NumPromptsSet: true}, []string{"x=1", "request_count=200"}},
		{"the same --set", []string{"rate=4"}, LoadOptions{Rate: 4, RateSet: true}, []string{"rate=4", "mode=poisson"}},
	} {
		got, err := mapLoadFlags(tc.sets, tc.v, "p", all)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name     string
		sets     []string
		v        LoadOptions
		declared []string
		want     string
	}{
		{"no such parameter", nil, LoadOptions{Rate: 4, RateSet: true}, []string{"mode"},
			"--request-rate: profile p has no parameter rate, so it cannot take this flag"},
		{"no max_concurrency", nil, LoadOptions{MaxConcurrency: 4, MaxConcurrencySet: true}, []string{"rate"},
			"--max-concurrency: profile p has no parameter max_concurrency"},
		{"no request_count", nil, LoadOptions{NumPrompts: 4, NumPromptsSet: true}, nil, "--num-prompts: profile p has no parameter request_count"},
		{"disagrees with --set", []string{"rate=5"}, LoadOptions{Rate: 4, RateSet: true}, []string{"rate", "mode"},
			"--request-rate 4 and --set rate=5 disagree: give one"},
		{"zero rate", nil, LoadOptions{Rate: 0, RateSet: true}, []string{"rate"}, "--request-rate 0: must be > 0"},
		{"burstiness alone", nil, LoadOptions{Burstiness: 0.5, BurstinessSet: true}, []string{"burstiness"}, "--burstiness applies to a finite --request-rate"},
		{"burstiness 0", nil, LoadOptions{Rate: 1, RateSet: true, Burstiness: 0, BurstinessSet: true}, []string{"rate", "burstiness"}, "--burstiness 0: must be a finite number > 0"},
		{"max concurrency 0", nil, LoadOptions{MaxConcurrencySet: true}, []string{"max_concurrency"}, "--max-concurrency 0: at least 1"},
		{"num prompts 0", nil, LoadOptions{NumPromptsSet: true}, []string{"request_count"}, "--num-prompts 0: at least 1"},
	} {
		declared := func(p string) bool {
			for _, d := range tc.declared {
				if d == p {
					return true
				}
			}
			return false
		}
		_, err := mapLoadFlags(tc.sets, tc.v, "p", declared)
		if err == nil || !strings.Contains(err.Error(), tc.want) || CodeOf(err) != CodeInvalid {
			t.Errorf("%s: error %v (exit %d), want %q (exit %d)", tc.name, err, CodeOf(err), tc.want, CodeInvalid)
		}
	}
}

func TestRunsSet(t *testing.T) {
	for _, tc := range []struct {
		sets  []string
		n     int
		given bool
		want  string // the sets joined, or the error
	}{
		{[]string{"a=1"}, 0, false, "a=1"},
		{[]string{"a=1"}, 4, true, "a=1 runs=4"},
		{[]string{"runs=4"}, 4, true, "runs=4 runs=4"},
		{[]string{"runs=3"}, 4, true, "--runs 4 and --set runs=3 disagree: give one"},
		{nil, 0, true, "--runs 0: at least 1"},
	} {
		got, err := RunsSet(tc.sets, tc.n, tc.given)
		s := strings.Join(got, " ")
		if err != nil {
			s = err.Error()
			if CodeOf(err) != CodeInvalid {
				t.Errorf("RunsSet(%v, %d, %v): code %d, want %d", tc.sets, tc.n, tc.given, CodeOf(err), CodeInvalid)
			}
		}
		if s != tc.want {
			t.Errorf("RunsSet(%v, %d, %v) = %q, want %q", tc.sets, tc.n, tc.given, s, tc.want)
		}
	}
}

// --num-prompts below window × min_windows (100 against 2 windows of 100,
// as vLLM users type it) runs without a steady-state result, said once,
// instead of being refused; at or above it, or with accept_unsteady given,
// or a profile without the parameter, nothing is added.
func TestNumPromptsUnsteady(t *testing.T) {
	params := map[string]any{"window": 100, "min_windows": 2, "accept_unsteady": false}
	for _, c := range []struct {
		name   string
		sets   []string
		n      int
		params map[string]any
		want   []string
	}{
		{"100 < 200", []string{"request_count=100"}, 100, params, []string{"request_count=100", "accept_unsteady=true"}},
		{"200 is enough", []string{"request_count=200"}, 200, params, []string{"request_count=200"}},
		{"--set window=10: 100 is enough", []string{"window=10", "request_count=100"}, 100, params, []string{"window=10", "request_count=100"}},
		{"accept_unsteady given", []string{"request_count=100", "accept_unsteady=false"}, 100, params, []string{"request_count=100", "accept_unsteady=false"}},
		{"no such parameter", []string{"request_count=100"}, 100, map[string]any{"window": 100, "min_windows": 2}, []string{"request_count=100"}},
	} {
		var msgs strings.Builder
		r := &Runner{s: &Spec{Messages: &msgs}}
		got := r.numPromptsUnsteady(c.sets, LoadOptions{NumPrompts: c.n, NumPromptsSet: true}, c.params)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if added := len(got) > len(c.sets); added != strings.Contains(msgs.String(), "steady state cannot be reached") {
			t.Errorf("%s: message %q", c.name, msgs.String())
		}
	}
}

// --steady-requests raises request_count to window × min_windows when the
// profile (with --set) asks for fewer: benchmark-1.5 has window 100 and
// min_windows 2, so 50 becomes 200, and window 10 makes 50 enough.
func TestSteadyRequests(t *testing.T) {
	var msgs strings.Builder
	spec := testSpec(t, nil)
	r, err := New(Spec{FindProfile: spec.FindProfile, Messages: &msgs})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sets, want []string }{
		{[]string{"request_count=50"}, []string{"request_count=200"}},
		{[]string{"request_count=50", "window=10"}, []string{"request_count=50", "window=10"}},
		{nil, nil}, // the default 1,000 is enough
		{[]string{"request_count=0"}, []string{"request_count=0"}}, // each prompt once: not known here
	} {
		got, err := r.steadyRequests("benchmark-1.5", c.sets)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, %v; want %v", c.sets, got, err, c.want)
		}
	}
	if !strings.Contains(msgs.String(), "request_count 50 raised to window × min_windows = 100 × 2 = 200") {
		t.Errorf("messages %q", msgs.String())
	}
}

// A sweep of a profile without sweep_columns shows the method's J/token,
// throughput and latency where it has those metrics (benchmark-1.5's
// table stays five columns and value, engine, status wide), else asiai's.
func TestSweepColumnsOfMethod(t *testing.T) {
	all := []string{"steady_state_j_per_token", "full_lifecycle_j_per_token", "formal_j_per_token", "output_throughput_tok_s", "ttft_p50_ms", "tpot_ms"}
	want := []string{"formal_j_per_token", "steady_state_j_per_token", "output_throughput_tok_s", "ttft_p50_ms", "tpot_ms"}
	if got := sweepColumns(nil, all); !slices.Equal(got, want) {
		t.Errorf("method: %v", got)
	}
	if got := sweepColumns(nil, []string{"tok_per_sec"}); !slices.Equal(got, []string{"tok_per_sec", "ttft_ms", "power_watts"}) {
		t.Errorf("asiai: %v", got)
	}
	if got := sweepColumns(map[string]any{"sweep_columns": "a, b"}, all); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("sweep_columns: %v", got)
	}
}
