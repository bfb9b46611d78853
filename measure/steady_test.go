package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// seqRequests makes back-to-back requests r1…rN, r_i generating on [i, i+1]
// with tokens[i-1] output tokens. With a constant 100 W, r_i alone in its
// piece gets 100 J, so its J/token is 100/tokens.
func seqRequests(tokens []int) []*record.Request {
	out := make([]*record.Request, len(tokens))
	for i, tok := range tokens {
		n := float64(i + 1)
		out[i] = req(fmt.Sprintf("r%d", i+1), n, n+1, tok)
	}
	return out
}

// flatPower is one device at a constant 100 W on [0, end].
func flatPower(t *testing.T, end float64) *PowerData {
	return mustPower(t, []record.PowerSample{ps("gpu0", 0, 100), ps("gpu0", end, 100)})
}

func reversed(rs []*record.Request) []*record.Request {
	out := make([]*record.Request, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r
	}
	return out
}

func TestSteadyStateQualifiesAtKnownIndex(t *testing.T) {
	pd := flatPower(t, 20)
	// r1..r3 noisy (J/token 2, 1, 4), then r4..r12 alternate 100/104 tokens
	// (J/token 1 and 100/104 = 25/26).
	tokens := []int{50, 100, 25, 100, 104, 100, 104, 100, 104, 100, 104, 100}
	reqs := seqRequests(tokens)
	sp := SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"}
	// Given in reverse order: completion order must come from DoneAt.
	got, err := pd.SteadyState(reversed(reqs), sp)
	if err != nil {
		t.Fatal(err)
	}
	// Windows of 4 (0-based start s) over 12 requests:
	//   s=0: {2,1,4,1} – CV ≫ 0.03
	//   s=1: {1,4,1,25/26}, s=2: {4,1,25/26,1} – contain the 4, fail
	//   s=3: {1,25/26,1,25/26} and s=7: {25/26,1,25/26,1}; s=11 does not fit
	//        (7+8 > 12), so 2 windows ≥ MinWindows. Each has two of each
	//        value: mean (a+b)/2, population std |a-b|/2, CV = |a-b|/(a+b)
	//        = (1/26)/(51/26) = 1/51 ≈ 0.0196 < 0.03 → steady from s=3,
	//        request number 4 (r4).
	// Span: from r4's completion (done at 5) → formal end 13. Energy
	// 100 W · 8 s = 800 J. Tokens in [5, 13]: r5..r12 lie inside (r4 =
	// [4,5] only touches 5): 4·100 (r6,8,10,12) + 4·104 (r5,7,9,11) = 400 +
	// 416 = 816. J/token = 800/816.
	want := Steady{
		Reached: true, StartIndex: 4, EndIndex: 12, StartRequestID: "r4", EndRequestID: "r12",
		SpanStart: SpanFirstCompletion, Start: 5, End: 13, EnergyJ: 800, Tokens: 816, JPerToken: 800.0 / 816,
		Windows: 2, WindowCVs: []float64{1.0 / 51, 1.0 / 51},
	}
	checkSteady(t, got, want)
	// The earlier reading: the earliest first token in r4..r7 = 4 → 13:
	// 900 J; tokens in [4, 13]: r4..r12 (r3 = [3,4] only touches 4):
	// 5·100 + 4·104 = 916. J/token 900/916.
	sp.SpanStart = SpanEarliestFirstToken
	if got, err = pd.SteadyState(reqs, sp); err != nil {
		t.Fatal(err)
	}
	want.SpanStart, want.Start, want.EnergyJ, want.Tokens, want.JPerToken = SpanEarliestFirstToken, 4, 900, 916, 900.0/916
	checkSteady(t, got, want)
}

// TestSteadyStateSpanStartAllAtOnce is the method's formal stage: every
// request sent at once (sent_at 0), here to an engine of two slots, so that
// the later requests wait for a slot. The qualifying window's requests got
// their first tokens while the batch was still ramping; the span starts at
// the completion of the window's first request, not at those first tokens.
func TestSteadyStateSpanStartAllAtOnce(t *testing.T) {
	pd := flatPower(t, 10) // 100 W on [0, 10]
	// id: [first token, done], output tokens (spread uniformly)
	//   r1: [1, 2] 20 (20 tok/s)  slot A
	//   r2: [1, 3] 20 (10 tok/s)  slot B
	//   r3: [2, 4] 20             slot A, after r1
	//   r4: [3, 5] 20             slot B, after r2
	//   r5: [4, 6], r6: [5, 7], r7: [6, 8], 20 each
	spans := [][2]float64{{1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}, {6, 8}}
	var reqs []*record.Request
	for i, sp := range spans {
		reqs = append(reqs, &record.Request{ID: fmt.Sprintf("r%d", i+1), Phase: "formal", OK: true,
			SentAt: 0, FirstTokenAt: sp[0], DoneAt: sp[1], OutputTokens: 20})
	}
	// Attribution, 100 J per 1-s piece split by the tokens made in it:
	//   [1,2] r1 20 tok, r2 10 → r1 200/3 J, r2 100/3 J
	//   [2,3] r2, r3 10 each → 50 J each; likewise [3,4] r3, r4; [4,5]
	//   r4, r5; [5,6] r5, r6; [6,7] r6, r7; [7,8] r7 alone → 100 J.
	// J/token: r1 (200/3)/20 = 10/3; r2 (100/3 + 50)/20 = 25/6;
	// r3…r6 100/20 = 5; r7 (50 + 100)/20 = 7.5.
	// W = 2: CV of {a, b} = |a−b|/(a+b): s0 {10/3, 25/6} 1/9, s1 {25/6, 5}
	// 1/11, s2 {5, 5} 0, s4 {5, 5} 0 (s6 does not fit in 7) → steady from
	// s2 = r3, number 3, with windows s2 and s4: 2 ≥ MinWindows.
	sp := SteadyParams{Window: 2, CVMax: 0.03, MinWindows: 2, FormalEnd: 9, Method: "trapz"}
	got, err := pd.SteadyState(reqs, sp)
	if err != nil {
		t.Fatal(err)
	}
	// Span from r3's completion, 4, to the formal end 9: 100 W · 5 s =
	// 500 J. Tokens in [4, 9]: r4 half of its 20 (10 on [4, 5]), r5, r6,
	// r7 whole (60) → 70 (r3 ends at 4). J/token 500/70.
	want := Steady{
		Reached: true, StartIndex: 3, EndIndex: 7, StartRequestID: "r3", EndRequestID: "r7",
		SpanStart: SpanFirstCompletion, Start: 4, End: 9, EnergyJ: 500, Tokens: 70, JPerToken: 500.0 / 70,
		Windows: 2, WindowCVs: []float64{0, 0},
	}
	checkSteady(t, got, want)
	// The earlier reading, from the earliest first token in the window
	// {r3, r4}: r3's at 2, inside the ramp (r2 still generates on
	// [2, 3]). [2, 9]: 700 J; tokens: r2 10 (on [2, 3]), r3 20, r4…r7 80
	// → 110. J/token 700/110.
	sp.SpanStart = SpanEarliestFirstToken
	if got, err = pd.SteadyState(reqs, sp); err != nil {
		t.Fatal(err)
	}
	want.SpanStart, want.Start, want.EnergyJ, want.Tokens, want.JPerToken = SpanEarliestFirstToken, 2, 700, 110, 700.0/110
	checkSteady(t, got, want)
	// "" is the default reading.
	sp.SpanStart = ""
	if got, err = pd.SteadyState(reqs, sp); err != nil || got.SpanStart != SpanFirstCompletion || got.Start != 4 {
		t.Errorf("default span start: got %q from %v (%v), want %q from 4", got.SpanStart, got.Start, err, SpanFirstCompletion)
	}
}

func checkSteady(t *testing.T, got, want Steady) {
	t.Helper()
	if got.Reached != want.Reached || got.StartIndex != want.StartIndex || got.EndIndex != want.EndIndex ||
		got.StartRequestID != want.StartRequestID || got.EndRequestID != want.EndRequestID ||
		got.SpanStart != want.SpanStart || !near(got.Start, want.Start) || !near(got.End, want.End) || !near(got.EnergyJ, want.EnergyJ) ||
		!near(got.Tokens, want.Tokens) || !near(got.JPerToken, want.JPerToken) || got.Windows != want.Windows ||
		len(got.WindowCVs) != len(want.WindowCVs) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for i := range want.WindowCVs {
		if !near(got.WindowCVs[i], want.WindowCVs[i]) {
			t.Errorf("WindowCVs[%d] = %v, want %v", i, got.WindowCVs[i], want.WindowCVs[i])
		}
	}
	if want.Reached && got.Reason != "" {
		t.Errorf("Reason %q although reached", got.Reason)
	}
}

func TestSteadyStateZeroLengthAndFailedRequests(t *testing.T) {
	pd := flatPower(t, 20)
	tokens := []int{50, 100, 25, 100, 104, 100, 104, 100, 104, 100, 104, 100}
	reqs := seqRequests(tokens)
	// A 1-token request without generation interval at t=6.5 (between r5
	// done at 6 and r6 done at 7), and a failed request.
	reqs = append(reqs, req("z", 6.5, 6.5, 1), &record.Request{ID: "bad", OK: false, DoneAt: 3.5})
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// z has no J/token and stays out of the windows (its 0 would break
	// every window's CV), so the windows are as in the test above; in
	// completion order it is number 6, after r1..r5, so r4 is still number
	// 4 and the run ends at number 13 (r12); the span starts at r4's
	// completion, 5. z's token is generated at 6.5, inside the span:
	// 816 + 1 = 817 tokens, 800/817 J/token. The failed request is ignored.
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 4, EndIndex: 13, StartRequestID: "r4", EndRequestID: "r12",
		SpanStart: SpanFirstCompletion, Start: 5, End: 13, EnergyJ: 800, Tokens: 817, JPerToken: 800.0 / 817,
		Windows: 2, WindowCVs: []float64{1.0 / 51, 1.0 / 51},
	})
}

func TestSteadyStateTokenTimesInSpan(t *testing.T) {
	pd := flatPower(t, 20)
	// Eight equal requests, W=4, MinWindows=2: steady from r1, span from
	// r1's completion to the formal end: [2, 8.5] (before r8 is done at 9).
	reqs := seqRequests([]int{10, 10, 10, 10, 10, 10, 10, 10})
	// r8 on [8, 9] streams 10 tokens in two chunks: 4 at 8.2 and 6 at 9.
	reqs[7].TokenTimes = []float64{8.2, 9}
	reqs[7].TokenCounts = []int{4, 6}
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 8.5, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// All J/token 100/10 = 10 → CV 0 everywhere; k=0 (r1, done at 2), span
	// [2, 8.5]: energy 100·6.5 = 650 J; tokens: r2..r7 whole = 60 (r1 =
	// [1,2] only touches 2); r8's chunks say it generated 4 tokens on
	// [8, 8.2] and 6 on [8.2, 9], of which 0.3 s of 0.8 s lie in the span:
	// 4 + 6·0.3/0.8 = 6.25 → 66.25. J/token 650/66.25.
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 1, EndIndex: 8, StartRequestID: "r1", EndRequestID: "r8",
		SpanStart: SpanFirstCompletion, Start: 2, End: 8.5, EnergyJ: 650, Tokens: 66.25, JPerToken: 650.0 / 66.25,
		Windows: 2, WindowCVs: []float64{0, 0},
	})
	// A uniform request cut by the span: formal end 8.25 with r8 uniform →
	// r8 contributes 10·0.25/1 = 2.5 tokens: 62.5 tokens, 625 J.
	reqs[7].TokenTimes, reqs[7].TokenCounts = nil, nil
	got, err = pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 8.25, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Tokens, 62.5) || !near(got.EnergyJ, 625) {
		t.Errorf("tokens, energy = %v, %v; want 62.5, 625", got.Tokens, got.EnergyJ)
	}
	// A chunk after DoneAt counts at DoneAt: r8's chunks at 8.2 (4) and 9.3
	// (6, clamped to 9); formal end 9.2 → both in: 60 + 10 = 70 tokens,
	// energy [2, 9.2] = 720 J.
	reqs[7].TokenTimes, reqs[7].TokenCounts = []float64{8.2, 9.3}, []int{4, 6}
	got, err = pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 9.2, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Tokens, 70) || !near(got.EnergyJ, 720) {
		t.Errorf("tokens, energy = %v, %v; want 70, 720", got.Tokens, got.EnergyJ)
	}
}

func TestSteadyStateCompletionOrderTies(t *testing.T) {
	pd := flatPower(t, 20)
	// "b" and "a" both generate on [1, 2] with 5 tokens each (50 J each,
	// 10 J/token), then c1..c6 on [2,3] … [7,8] with 10 tokens (10 J/token).
	// The tie on done_at = 2 is broken by ID: a is number 1, b number 2.
	reqs := []*record.Request{req("b", 1, 2, 5), req("a", 1, 2, 5)}
	for i := 2; i < 8; i++ {
		reqs = append(reqs, req(fmt.Sprintf("c%d", i-1), float64(i), float64(i+1), 10))
	}
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// CV 0 everywhere → k = 0; span from a's completion (2) to the formal
	// end = latest done_at (8): 600 J over c1..c6's 60 tokens (a and b
	// generate on [1, 2], before the span).
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 1, EndIndex: 8, StartRequestID: "a", EndRequestID: "c6",
		SpanStart: SpanFirstCompletion, Start: 2, End: 8, EnergyJ: 600, Tokens: 60, JPerToken: 10,
		Windows: 2, WindowCVs: []float64{0, 0},
	})
}

func TestSteadyStateNeverQualifies(t *testing.T) {
	pd := flatPower(t, 20)
	cases := []struct {
		name   string
		tokens []int
		want   []string
		cvs    []float64
	}{
		{
			// Alternating 100/150 tokens: J/token 1 and 2/3; every window of 4
			// holds two of each: CV = (1-2/3)/(1+2/3) = (1/3)/(5/3) = 0.2.
			// Best start: the first one (s=0), with 3 windows (0, 4, 8).
			name:   "alternating",
			tokens: []int{100, 150, 100, 150, 100, 150, 100, 150, 100, 150, 100, 150},
			want: []string{"no start index k gives ≥2 consecutive non-overlapping 4-request windows with CV < 0.03",
				"n=12", "best CV 0.2", "3 window CVs from request 1"},
			cvs: []float64{0.2, 0.2, 0.2},
		},
		{
			// r1..r4 and r9..r12 flat, r5..r8 noisy: s=0 is fine itself, but
			// its chain s=0,4,8 contains the noisy window; s=1..8 contain a
			// noisy request in their first or second window or have fewer
			// than 2 windows.
			name:   "later window breaks the chain",
			tokens: []int{100, 100, 100, 100, 50, 100, 50, 100, 100, 100, 100, 100},
			want:   []string{"no start index", "n=12"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := pd.SteadyState(seqRequests(c.tokens), SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Reached || got.StartIndex != 0 || got.JPerToken != 0 {
				t.Fatalf("reached: %+v", got)
			}
			for _, s := range c.want {
				if !strings.Contains(got.Reason, s) {
					t.Errorf("reason %q does not contain %q", got.Reason, s)
				}
			}
			if c.cvs != nil {
				if len(got.WindowCVs) != len(c.cvs) {
					t.Fatalf("WindowCVs = %v, want %v", got.WindowCVs, c.cvs)
				}
				for i := range c.cvs {
					if !near(got.WindowCVs[i], c.cvs[i]) {
						t.Errorf("WindowCVs[%d] = %v, want %v", i, got.WindowCVs[i], c.cvs[i])
					}
				}
			}
		})
	}
}

func TestSteadyStateTooFewRequests(t *testing.T) {
	pd := flatPower(t, 20)
	got, err := pd.SteadyState(seqRequests([]int{10, 10, 10, 10, 10, 10, 10}), SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// 7 < 2·4 = 8
	if got.Reached || !strings.Contains(got.Reason, "only 7 requests") || !strings.Contains(got.Reason, "8 needed") {
		t.Errorf("got %+v", got)
	}
	if got.EndIndex != 7 || got.EndRequestID != "r7" {
		t.Errorf("EndIndex, EndRequestID = %d, %q; want 7, r7", got.EndIndex, got.EndRequestID)
	}
	got, err = pd.SteadyState(nil, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, Method: "trapz"})
	if err != nil || got.Reached || got.Reason == "" {
		t.Errorf("no requests: %+v, %v", got, err)
	}
}

func TestSteadyStateErrors(t *testing.T) {
	pd := flatPower(t, 20)
	good := SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"}
	reqs := seqRequests([]int{10, 10, 10, 10, 10, 10, 10, 10})
	mod := func(f func(*SteadyParams)) SteadyParams { sp := good; f(&sp); return sp }
	cases := []struct {
		name string
		reqs []*record.Request
		sp   SteadyParams
		want string
	}{
		{"window 1", reqs, mod(func(s *SteadyParams) { s.Window = 1 }), "window"},
		{"min windows 0", reqs, mod(func(s *SteadyParams) { s.MinWindows = 0 }), "min windows"},
		{"cv max 0", reqs, mod(func(s *SteadyParams) { s.CVMax = 0 }), "cv max"},
		{"cv max NaN", reqs, mod(func(s *SteadyParams) { s.CVMax = math.NaN() }), "cv max"},
		{"formal end NaN", reqs, mod(func(s *SteadyParams) { s.FormalEnd = math.NaN() }), "formal end"},
		{"formal end before span", reqs, mod(func(s *SteadyParams) { s.FormalEnd = 0.5 }), "before the steady span start"},
		{"unknown method", reqs, mod(func(s *SteadyParams) { s.Method = "simpson" }), `"simpson"`},
		{"unknown span start", reqs, mod(func(s *SteadyParams) { s.SpanStart = "first_token" }), `span start "first_token" is not first_completion or earliest_first_token`},
		{"nil request", append(seqRequests([]int{1}), nil), good, "request 1 is nil"},
		{"outside power data", seqRequests(make20(10)), good, "outside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pd.SteadyState(c.reqs, c.sp)
			wantErr(t, err, c.want)
		})
	}
}

func make20(tok int) []int {
	out := make([]int, 20)
	for i := range out {
		out[i] = tok
	}
	return out
}

// bruteSteadyStart is the steady-state rule written directly: for each k,
// compute every window's CV with two loops.
func bruteSteadyStart(xs []float64, w, minWin int, cvMax float64) int {
	n := len(xs)
	for k := 0; k+minWin*w <= n; k++ {
		ok := true
		for s := k; s+w <= n; s += w {
			sum := 0.0
			for _, x := range xs[s : s+w] {
				sum += x
			}
			mean := sum / float64(w)
			ss := 0.0
			for _, x := range xs[s : s+w] {
				ss += (x - mean) * (x - mean)
			}
			if math.Sqrt(ss/float64(w))/mean >= cvMax {
				ok = false
				break
			}
		}
		if ok {
			return k
		}
	}
	return -1
}

func TestSteadyStateMatchesBruteForce(t *testing.T) {
	pd := flatPower(t, 400)
	reached := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 60 + rng.IntN(200)
		tokens := make([]int, n)
		noisyUntil := rng.IntN(n)
		for i := range tokens {
			spread := 3 // ±3 % around 100 tokens: CVs near 0.02
			if i < noisyUntil && rng.IntN(4) == 0 {
				spread = 30
			}
			tokens[i] = 1000 + rng.IntN(2*spread*10+1) - spread*10
		}
		reqs := seqRequests(tokens)
		xs := make([]float64, n)
		for i, tok := range tokens {
			xs[i] = 100 / float64(tok)
		}
		w, minWin, cvMax := 5+rng.IntN(10), 1+rng.IntN(3), 0.018
		want := bruteSteadyStart(xs, w, minWin, cvMax)
		got, err := pd.SteadyState(reqs, SteadyParams{Window: w, CVMax: cvMax, MinWindows: minWin, Method: "trapz"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Reached != (want >= 0) || (want >= 0 && got.StartIndex != want+1) {
			t.Errorf("seed %d (n=%d, W=%d, min %d): got reached=%v start=%d, brute force start index %d; reason %q",
				seed, n, w, minWin, got.Reached, got.StartIndex, want, got.Reason)
		}
		if got.Reached {
			reached++
			if got.End != float64(n+1) {
				t.Errorf("seed %d: End = %v, want the latest done_at %d", seed, got.End, n+1)
			}
		}
	}
	if reached == 0 || reached == 40 {
		t.Errorf("random cases reached steady state %d/40 times; the test needs both outcomes", reached)
	}
}

// TestSteadyStateWindowJPerToken: the steady span cut at the start of
// each window, each piece's energy over the output tokens generated in
// it. Back-to-back requests r_i on [i, i+1] at a flat 100 W; tokens 100,
// 100, 50, 50, 25, 25 with windows of 2: per-request J/token 1, 1, 2, 2,
// 4, 4, every window's CV 0 < 0.03, steady from r1 with 3 windows. Span:
// r1's completion (2) to the formal end 7. Pieces cut at the completions
// of r3 (4) and r5 (6). By hand:
//
//	[2, 4]: 200 J / (r2 100 + r3 50) tokens = 4/3
//	[4, 6]: 200 J / (r4 50 + r5 25) tokens  = 8/3
//	[6, 7]: 100 J / (r6 25) tokens           = 4
//
// (they add up to the span's 500 J / 250 tokens = 2). The fixture of
// TestSteadyStateQualifiesAtKnownIndex: span [5, 13] cut at r8's
// completion (9): [5, 9] holds r5..r8 (104 + 100 + 104 + 100 = 408
// tokens, 400 J), [9, 13] r9..r12 (408 tokens, 400 J): 400/408 each.
func TestSteadyStateWindowJPerToken(t *testing.T) {
	pd := flatPower(t, 20)
	got, err := pd.SteadyState(seqRequests([]int{100, 100, 50, 50, 25, 25}),
		SteadyParams{Window: 2, CVMax: 0.03, MinWindows: 2, FormalEnd: 7, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{4.0 / 3, 8.0 / 3, 4}
	if !got.Reached || len(got.WindowJPerToken) != len(want) {
		t.Fatalf("reached %v, window J/token %v, want %v", got.Reached, got.WindowJPerToken, want)
	}
	for i, w := range want {
		if !near(got.WindowJPerToken[i], w) {
			t.Errorf("window %d J/token %v, want %v", i+1, got.WindowJPerToken[i], w)
		}
	}
	got, err = pd.SteadyState(seqRequests([]int{50, 100, 25, 100, 104, 100, 104, 100, 104, 100, 104, 100}),
		SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.WindowJPerToken) != 2 || !near(got.WindowJPerToken[0], 400.0/408) || !near(got.WindowJPerToken[1], 400.0/408) {
		t.Errorf("window J/token %v, want [400/408 400/408]", got.WindowJPerToken)
	}
}
