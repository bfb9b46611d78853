package measure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// One device at a constant 200 W on [0, 10] (a piece of length L holds
// 200·L J) and two overlapping requests:
//
//	A sent 1, first token 3, done 6; B sent 2, first token 4, done 8.
//	[0, 1] nobody in flight:          200 J idle
//	[1, 2] A prefill alone:           200 J prefill
//	[2, 3] A and B both prefill:      200 J prefill (100 J each)
//	[3, 4] A decode, B prefill:       400/2: 100 J decode, 100 J prefill
//	[4, 6] A and B both decode:       400 J decode
//	[6, 8] B decode alone:            400 J decode
//	[8, 10] nobody:                   400 J idle
//	prefill 200+200+100 = 500 J; decode 100+400+400 = 900 J;
//	idle 200+400 = 600 J; sum 2000 J = 200 W × 10 s.
//
// Over the window [2, 7]: [2, 3] 200 J prefill, [3, 4] 100 J each,
// [4, 6] 400 J decode, [6, 7] 200 J decode: prefill 300 J, decode 700 J,
// idle 0, sum 1000 J = 200 W × 5 s.
func TestSplitPhasesHandWorked(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 200), ps("gpu0", 5, 200), ps("gpu0", 10, 200)})
	reqs := []*record.Request{resReq("A", 1, 3, 6, 10), resReq("B", 2, 4, 8, 10)}
	for _, tc := range []struct {
		name  string
		a, b  float64
		reqs  []*record.Request
		want  PhaseSplit
		total float64
	}{
		{"whole run", 0, 10, reqs, PhaseSplit{PrefillJ: 500, DecodeJ: 900, IdleJ: 600, Requests: 2}, 2000},
		{"window [2, 7]", 2, 7, reqs, PhaseSplit{PrefillJ: 300, DecodeJ: 700, IdleJ: 0, Requests: 2}, 1000},
		// B alone: [2, 4] prefill 400 J, [4, 8] decode 800 J, the rest
		// (2 + 2 s) idle 800 J.
		{"one request", 0, 10, reqs[1:], PhaseSplit{PrefillJ: 400, DecodeJ: 800, IdleJ: 800, Requests: 1}, 2000},
		// No token came (first_token_at absent): in prefill to its end,
		// [1, 6] 1000 J; the rest 1000 J idle.
		{"no first token", 0, 10, []*record.Request{{ID: "F", SentAt: 1, DoneAt: 6}}, PhaseSplit{PrefillJ: 1000, IdleJ: 1000, Requests: 1}, 2000},
		// No request in flight (none, or one without times): all idle.
		{"no request", 0, 10, nil, PhaseSplit{IdleJ: 2000}, 2000},
		{"request without times", 0, 10, []*record.Request{{ID: "G"}}, PhaseSplit{IdleJ: 2000}, 2000},
		{"request outside the window", 8, 10, reqs[:1], PhaseSplit{IdleJ: 400}, 400},
		{"empty window", 5, 5, reqs, PhaseSplit{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pd.SplitPhases(tc.reqs, tc.a, tc.b, MethodTrapz)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got.PrefillJ, tc.want.PrefillJ) || !near(got.DecodeJ, tc.want.DecodeJ) || !near(got.IdleJ, tc.want.IdleJ) || got.Requests != tc.want.Requests {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if sum := got.PrefillJ + got.DecodeJ + got.IdleJ; !near(sum, tc.total) {
				t.Errorf("prefill + decode + idle = %v, want the window's energy %v", sum, tc.total)
			}
		})
	}
}

func TestSplitPhasesErrors(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 200), ps("gpu0", 10, 200)})
	for _, tc := range []struct {
		name, method string
		a, b         float64
		reqs         []*record.Request
		msg          string
	}{
		{"window outside the samples", MethodTrapz, 5, 12, nil, "outside the samples"},
		{"window backwards", MethodTrapz, 6, 5, nil, "start after end"},
		{"unknown method", "simpson", 0, 10, nil, "unknown energy method"},
		{"no counter", MethodCounter, 0, 10, nil, "no energy counter"},
		{"nil request", MethodTrapz, 0, 10, []*record.Request{nil}, "request 0 is nil"},
	} {
		_, err := pd.SplitPhases(tc.reqs, tc.a, tc.b, tc.method)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.msg)
		}
	}
}

// Subset integrates the named devices only: gpu0 at 300 W and gpu1 at
// 200 W on [0, 10]: gpu1 alone 2000 J, both 5000 J.
func TestSubset(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 300), ps("gpu1", 0, 200), ps("gpu0", 10, 300), ps("gpu1", 10, 200)})
	one, err := pd.Subset([]string{"gpu1"})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := one.Energy(0, 10, MethodTrapz); err != nil || e != 2000 {
		t.Errorf("gpu1 alone: %v J, %v; want 2000 J", e, err)
	}
	both, err := pd.Subset([]string{"gpu1", "gpu0"})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := both.Energy(0, 10, MethodTrapz); err != nil || e != 5000 {
		t.Errorf("both: %v J, %v; want 5000 J", e, err)
	}
	for _, tc := range []struct {
		devs []string
		msg  string
	}{
		{nil, "no device"},
		{[]string{"gpu9"}, `unknown device "gpu9"`},
		{[]string{"gpu0", "gpu0"}, "named twice"},
	} {
		if _, err := pd.Subset(tc.devs); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Subset(%v): error %v, want %q", tc.devs, err, tc.msg)
		}
	}
}

// SplitPhases sizes its spans: it allocates as many times for 4,000
// requests in flight as for 40 (appending without sizing reallocates
// some 20 times more on the way to 8,000 spans).
func TestSplitPhasesSized(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 200), ps("gpu0", 5, 200), ps("gpu0", 10, 200)})
	reqsOf := func(n int) []*record.Request {
		reqs := make([]*record.Request, n)
		for i := range reqs {
			sent := 1 + 7*float64(i)/float64(n)
			reqs[i] = resReq(fmt.Sprint(i), sent, sent+0.5, sent+1, 10)
		}
		return reqs
	}
	allocs := func(reqs []*record.Request) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := pd.SplitPhases(reqs, 0, 10, MethodTrapz); err != nil {
				t.Fatal(err)
			}
		})
	}
	if few, many := allocs(reqsOf(40)), allocs(reqsOf(4000)); many != few {
		t.Errorf("SplitPhases allocates %v times for 4,000 requests, %v for 40", many, few)
	}
}
