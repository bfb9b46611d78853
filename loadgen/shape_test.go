package loadgen

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// near checks a schedule against hand-computed times in seconds, to the
// nanosecond the offsets are rounded to.
func near(t *testing.T, name string, got []time.Duration, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d offsets, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		if d := got[i] - time.Duration(math.Round(w*1e9)); d > 1 || d < -1 {
			t.Errorf("%s: request %d at %v, want %.9f s", name, i, got[i], w)
		}
	}
}

func TestConstantArrivals(t *testing.T) {
	// rate 4: request i at i/4 s.
	near(t, "rate 4", ConstantArrivals(5, 4), []float64{0, 0.25, 0.5, 0.75, 1})
	// rate 3: i/3 s, rounded to the nanosecond.
	near(t, "rate 3", ConstantArrivals(3, 3), []float64{0, 0.333333333, 0.666666667})
	for _, d := range ConstantArrivals(4, math.Inf(1)) {
		if d != 0 {
			t.Fatal("infinite rate must send everything at once")
		}
	}
}

// The ramp's times, worked out by hand from Λ(t) = r0·t + k·t²/2 = i with
// T = 2n/(r0+r1) and k = (r1−r0)/T.
func TestRampArrivals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		r0, r1 float64
		want   []float64
	}{
		// n 4, 1 → 3 req/s: T = 8/4 = 2 s, k = 1; t + t²/2 = i gives
		// t = √(1+2i) − 1: 0, √3−1, √5−1, √7−1.
		{"rising", 4, 1, 3, []float64{0, 0.7320508075688772, 1.2360679774997898, 1.6457513110645907}},
		// n 4, 3 → 1 req/s: T = 2 s, k = −1; 3t − t²/2 = i gives
		// t = 3 − √(9−2i): 0, 3−√7, 3−√5, 3−√3.
		{"falling", 4, 3, 1, []float64{0, 0.3542486889354093, 0.7639320225002102, 1.2679491924311228}},
		// n 3, 0 → 2 req/s: T = 6/2 = 3 s, k = 2/3; t²/3 = i gives
		// t = √(3i): 0, √3, √6.
		{"from zero", 3, 0, 2, []float64{0, 1.7320508075688772, 2.449489742783178}},
		// n 3, 2 → 2 req/s: k = 0, a constant rate: i/2.
		{"flat", 3, 2, 2, []float64{0, 0.5, 1}},
		{"one request", 1, 5, 10, []float64{0}},
	} {
		near(t, tc.name, RampArrivals(tc.n, tc.r0, tc.r1), tc.want)
	}
	// The mode runs the same schedule.
	c := Config{Mode: Ramp, RampStartRate: 1, RampEndRate: 3}
	if !reflect.DeepEqual(c.Schedule(4), RampArrivals(4, 1, 3)) {
		t.Error("mode ramp does not run RampArrivals")
	}
}

// TestGammaArrivalsStatistics: the gaps of a seeded gamma schedule have
// mean 1/rate and CV 1/√burstiness (gamma of shape β, scale 1/(rate·β):
// mean 1/rate, variance 1/(rate²·β)). The bounds are several standard
// errors of 20,000 gaps wide; the schedule is fixed by its seed, so this
// cannot flake.
func TestGammaArrivalsStatistics(t *testing.T) {
	const n, rate = 20001, 10.0
	for _, beta := range []float64{0.1, 0.25, 0.5, 1, 2, 4} {
		for seed := int64(1); seed <= 3; seed++ {
			a := GammaArrivals(n, rate, beta, seed)
			if a[0] != 0 {
				t.Fatalf("β %v: first send at %v, want at once", beta, a[0])
			}
			gaps := make([]float64, n-1)
			var sum float64
			for i := 1; i < n; i++ {
				if a[i] < a[i-1] {
					t.Fatalf("β %v seed %d: the schedule goes back at %d", beta, seed, i)
				}
				gaps[i-1] = (a[i] - a[i-1]).Seconds()
				sum += gaps[i-1]
			}
			mean := sum / float64(len(gaps))
			var ss float64
			for _, g := range gaps {
				ss += (g - mean) * (g - mean)
			}
			cv := math.Sqrt(ss/float64(len(gaps))) / mean
			wantCV := 1 / math.Sqrt(beta)
			// The mean's standard error is CV/√20000 of it (2.2 % at
			// β 0.1): 5 of them.
			if se := wantCV / math.Sqrt(float64(len(gaps))); math.Abs(mean*rate-1) > 5*se {
				t.Errorf("β %v seed %d: mean gap %.5f s, want 0.1 s within %.2f %%", beta, seed, mean, 500*se)
			}
			// The CV's: about √((2 + 6/β)/4/20000) of it (the excess
			// kurtosis of a gamma is 6/β): 4.3 % at β 0.1; 15 % allowed.
			if math.Abs(cv/wantCV-1) > 0.15 {
				t.Errorf("β %v seed %d: gaps' CV %.3f, want %.3f", beta, seed, cv, wantCV)
			}
		}
	}
}

// TestGammaArrivalsShape: beyond the moments, the share of gaps shorter
// than the mean is the gamma's CDF at its mean, which for an integer shape
// β is P(Poisson(β) ≥ β) = 1 − e^−β·Σ_{j<β} β^j/j!:
//
//	β 1: 1 − e^−1                    = 0.632121
//	β 2: 1 − e^−2·(1 + 2)            = 0.593994
//	β 4: 1 − e^−4·(1 + 4 + 8 + 32/3) = 0.566530
//
// Over 20,000 gaps the share's standard error is about 0.0035: 0.015 is
// four of them.
func TestGammaArrivalsShape(t *testing.T) {
	const n, rate = 20001, 4.0
	for _, tc := range []struct{ beta, want float64 }{{1, 0.632121}, {2, 0.593994}, {4, 0.566530}} {
		a := GammaArrivals(n, rate, tc.beta, 11)
		short := 0
		for i := 1; i < n; i++ {
			if (a[i] - a[i-1]).Seconds() < 1/rate {
				short++
			}
		}
		if got := float64(short) / float64(n-1); math.Abs(got-tc.want) > 0.015 {
			t.Errorf("β %v: %.4f of gaps below the mean, want %.4f", tc.beta, got, tc.want)
		}
	}
}

func TestGammaArrivalsDeterministic(t *testing.T) {
	a := GammaArrivals(500, 10, 0.5, 7)
	if !reflect.DeepEqual(a, GammaArrivals(500, 10, 0.5, 7)) {
		t.Fatal("same seed, different schedules")
	}
	if reflect.DeepEqual(a, GammaArrivals(500, 10, 0.5, 8)) {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
	for _, d := range GammaArrivals(5, math.Inf(1), 0.5, 1) {
		if d != 0 {
			t.Fatal("infinite rate must send everything at once")
		}
	}
	// Gamma runs its own schedule; with burstiness 1 it is poisson's.
	if c := (Config{Mode: Gamma, Rate: 10, Burstiness: 0.5, Seed: 7}); !reflect.DeepEqual(c.Schedule(500), a) {
		t.Error("mode gamma does not run GammaArrivals")
	}
	if c := (Config{Mode: Gamma, Rate: 10, Burstiness: 1, Seed: 7}); !reflect.DeepEqual(c.Schedule(50), Arrivals(50, 10, 7)) {
		t.Error("gamma with burstiness 1 does not run poisson's schedule")
	}
	if c := (Config{Mode: Constant, Rate: 4}); !reflect.DeepEqual(c.Schedule(5), ConstantArrivals(5, 4)) {
		t.Error("mode constant does not run ConstantArrivals")
	}
	for _, m := range []Mode{Unlimited, Concurrency} {
		if s := (Config{Mode: m, Concurrency: 2}).Schedule(5); s != nil {
			t.Errorf("mode %s has a schedule %v", m, s)
		}
	}
}

// TestLoadRecord: the load object holds the canonical shape and only the
// parameters it uses.
func TestLoadRecord(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, `{"mode":"unlimited"}`},
		{Config{Mode: Concurrency, Concurrency: 16}, `{"mode":"concurrency","concurrency":16}`},
		// vLLM's --max-concurrency without a rate.
		{Config{Mode: Unlimited, MaxConcurrency: 16}, `{"mode":"concurrency","concurrency":16}`},
		{Config{Mode: Constant, Rate: 5}, `{"mode":"constant","rate":5}`},
		{Config{Mode: Poisson, Rate: 2, Concurrency: 8}, `{"mode":"poisson","rate":2,"max_concurrency":8}`},
		{Config{Mode: Gamma, Rate: 4, Burstiness: 1}, `{"mode":"poisson","rate":4}`},
		{Config{Mode: Gamma, Rate: 4, Burstiness: 0.5, MaxConcurrency: 64}, `{"mode":"gamma","rate":4,"burstiness":0.5,"max_concurrency":64}`},
		{Config{Mode: Ramp, RampEndRate: 10}, `{"mode":"ramp","ramp_start_rate":0,"ramp_end_rate":10}`},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		b, err := json.Marshal(tc.cfg.Load())
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%+v: load %s, want %s", tc.cfg, b, tc.want)
		}
	}
}

// TestValidateShapes: a parameter the mode does not use is refused, so a
// load is never silently another than the one asked for.
func TestValidateShapes(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: Unlimited, Concurrency: 16}, "concurrency 16 with mode unlimited: set mode concurrency"},
		{Config{Mode: Concurrency, Concurrency: 4, MaxConcurrency: 8}, "mode concurrency sets its requests in flight with concurrency"},
		{Config{Mode: Constant}, "mode constant needs a rate > 0"},
		{Config{Mode: Gamma, Rate: -1}, "mode gamma needs a rate > 0"},
		{Config{Mode: Concurrency, Concurrency: 2, Rate: 3}, "rate 3 applies to modes constant, poisson and gamma, not concurrency"},
		{Config{Mode: Ramp, Rate: 3, RampEndRate: 2}, "rate 3 applies to modes constant, poisson and gamma, not ramp"},
		{Config{Mode: Poisson, Rate: 3, Burstiness: 0.5}, "burstiness 0.5 applies to mode gamma, not poisson"},
		{Config{Mode: Gamma, Rate: 3, Burstiness: -2}, "burstiness -2: must be a finite number > 0"},
		{Config{Mode: Gamma, Rate: 3, Burstiness: math.Inf(1)}, "burstiness +Inf: must be a finite number > 0"},
		{Config{Mode: Constant, Rate: 3, RampStartRate: 1}, "ramp_start_rate and ramp_end_rate apply to mode ramp, not constant"},
		{Config{Mode: Ramp}, "mode ramp needs ramp_start_rate and ramp_end_rate finite, >= 0 and not both 0"},
		{Config{Mode: Ramp, RampStartRate: -1, RampEndRate: 3}, "mode ramp needs ramp_start_rate"},
		{Config{Mode: Ramp, RampStartRate: 1, RampEndRate: math.NaN()}, "mode ramp needs ramp_start_rate"},
		{Config{Mode: Poisson, Rate: 1, Concurrency: 2, MaxConcurrency: 3}, "concurrency 2 and max_concurrency 3 both cap"},
		{Config{Mode: Poisson, Rate: 1, MaxConcurrency: -3}, "max_concurrency -3: must be >= 0"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, cfg := range []Config{
		{Mode: Constant, Rate: 1, MaxConcurrency: 4},
		{Mode: Gamma, Rate: 1, Burstiness: 0.2},
		{Mode: Ramp, RampStartRate: 5},
		{Mode: Poisson, Rate: 1, Concurrency: 3, MaxConcurrency: 3},
		{Mode: Unlimited, MaxConcurrency: 3},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
