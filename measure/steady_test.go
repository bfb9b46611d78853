package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// seqRequests makes back-to-back requests r1…rN, r_i generating on [i, i+1]
// with tokens[i-1] output tokens. With a constant 100 W, r_i alone in its
// piece gets 100 J, so its J/token is 100/tokens.
func seqRequests(tokens []int) []*archive.Request {
	out := make([]*archive.Request, len(tokens))
	for i, tok := range tokens {
		n := float64(i + 1)
		out[i] = req(fmt.Sprintf("r%d", i+1), n, n+1, tok)
	}
	return out
}

// flatPower is one device at a constant 100 W on [0, end].
func flatPower(t *testing.T, end float64) *PowerData {
	return mustPower(t, []archive.PowerSample{ps("gpu0", 0, 100), ps("gpu0", end, 100)})
}

func reversed(rs []*archive.Request) []*archive.Request {
	out := make([]*archive.Request, len(rs))
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
	// Span: earliest first_token_at in r4..r7 = 4 → formal end 13.
	// Energy 100 W · 9 s = 900 J. Tokens in [4, 13]: r4..r12 lie inside
	// (r3 = [3,4] only touches 4): 5·100 (r4,6,8,10,12) + 4·104 (r5,7,9,11)
	// = 500 + 416 = 916. J/token = 900/916.
	want := Steady{
		Reached: true, StartIndex: 4, EndIndex: 12, StartRequestID: "r4", EndRequestID: "r12",
		Start: 4, End: 13, EnergyJ: 900, Tokens: 916, JPerToken: 900.0 / 916,
		Windows: 2, WindowCVs: []float64{1.0 / 51, 1.0 / 51},
	}
	checkSteady(t, got, want)
}

func checkSteady(t *testing.T, got, want Steady) {
	t.Helper()
	if got.Reached != want.Reached || got.StartIndex != want.StartIndex || got.EndIndex != want.EndIndex ||
		got.StartRequestID != want.StartRequestID || got.EndRequestID != want.EndRequestID ||
		!near(got.Start, want.Start) || !near(got.End, want.End) || !near(got.EnergyJ, want.EnergyJ) ||
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
	reqs = append(reqs, req("z", 6.5, 6.5, 1), &archive.Request{ID: "bad", OK: false, DoneAt: 3.5})
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 13, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// z has no J/token and stays out of the windows (its 0 would break
	// every window's CV), so the windows are as in the test above; in
	// completion order it is number 6, after r1..r5, so r4 is still number
	// 4 and the run ends at number 13 (r12). Its token is generated at 6.5,
	// inside the span: 916 + 1 = 917 tokens, 900/917 J/token. The failed
	// request is ignored.
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 4, EndIndex: 13, StartRequestID: "r4", EndRequestID: "r12",
		Start: 4, End: 13, EnergyJ: 900, Tokens: 917, JPerToken: 900.0 / 917,
		Windows: 2, WindowCVs: []float64{1.0 / 51, 1.0 / 51},
	})
}

func TestSteadyStateTokenTimesInSpan(t *testing.T) {
	pd := flatPower(t, 20)
	// Eight equal requests, W=4, MinWindows=2: steady from r1, span [1, 8.5]
	// with formal end 8.5 (before r8 is done at 9).
	reqs := seqRequests([]int{10, 10, 10, 10, 10, 10, 10, 10})
	// r8 on [8, 9] streams 10 tokens in two chunks: 4 at 8.2 and 6 at 9.
	reqs[7].TokenTimes = []float64{8.2, 9}
	reqs[7].TokenCounts = []int{4, 6}
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 8.5, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// All J/token 100/10 = 10 → CV 0 everywhere; k=0 (r1), span [1, 8.5]:
	// energy 100·7.5 = 750 J; tokens: r1..r7 whole = 70; r8's chunks say it
	// generated 4 tokens on [8, 8.2] and 6 on [8.2, 9], of which 0.3 s of
	// 0.8 s lie in the span: 4 + 6·0.3/0.8 = 6.25 → 76.25. J/token 750/76.25.
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 1, EndIndex: 8, StartRequestID: "r1", EndRequestID: "r8",
		Start: 1, End: 8.5, EnergyJ: 750, Tokens: 76.25, JPerToken: 750.0 / 76.25,
		Windows: 2, WindowCVs: []float64{0, 0},
	})
	// A uniform request cut by the span: formal end 8.25 with r8 uniform →
	// r8 contributes 10·0.25/1 = 2.5 tokens: 72.5 tokens, 725 J.
	reqs[7].TokenTimes, reqs[7].TokenCounts = nil, nil
	got, err = pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 8.25, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Tokens, 72.5) || !near(got.EnergyJ, 725) {
		t.Errorf("tokens, energy = %v, %v; want 72.5, 725", got.Tokens, got.EnergyJ)
	}
	// A chunk after DoneAt counts at DoneAt: r8's chunks at 8.2 (4) and 9.3
	// (6, clamped to 9); formal end 9.2 → both in: 70 + 10 = 80 tokens,
	// energy [1, 9.2] = 820 J.
	reqs[7].TokenTimes, reqs[7].TokenCounts = []float64{8.2, 9.3}, []int{4, 6}
	got, err = pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, FormalEnd: 9.2, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Tokens, 80) || !near(got.EnergyJ, 820) {
		t.Errorf("tokens, energy = %v, %v; want 80, 820", got.Tokens, got.EnergyJ)
	}
}

func TestSteadyStateCompletionOrderTies(t *testing.T) {
	pd := flatPower(t, 20)
	// "b" and "a" both generate on [1, 2] with 5 tokens each (50 J each,
	// 10 J/token), then c1..c6 on [2,3] … [7,8] with 10 tokens (10 J/token).
	// The tie on done_at = 2 is broken by ID: a is number 1, b number 2.
	reqs := []*archive.Request{req("b", 1, 2, 5), req("a", 1, 2, 5)}
	for i := 2; i < 8; i++ {
		reqs = append(reqs, req(fmt.Sprintf("c%d", i-1), float64(i), float64(i+1), 10))
	}
	got, err := pd.SteadyState(reqs, SteadyParams{Window: 4, CVMax: 0.03, MinWindows: 2, Method: "trapz"})
	if err != nil {
		t.Fatal(err)
	}
	// CV 0 everywhere → k = 0; span [1, 8] (formal end = latest done_at):
	// 700 J over 5+5+60 = 70 tokens.
	checkSteady(t, got, Steady{
		Reached: true, StartIndex: 1, EndIndex: 8, StartRequestID: "a", EndRequestID: "c6",
		Start: 1, End: 8, EnergyJ: 700, Tokens: 70, JPerToken: 10,
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
		reqs []*archive.Request
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
