package measure

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// ps builds a power sample without counter or memory.
func ps(dev string, t, w float64) record.PowerSample {
	return record.PowerSample{T: t, Device: dev, PowerW: w, MemUsedBytes: -1}
}

// psc builds a power sample with a cumulative counter.
func psc(dev string, t, w, e float64) record.PowerSample {
	return record.PowerSample{T: t, Device: dev, PowerW: w, EnergyJ: e, HasEnergy: true, MemUsedBytes: -1}
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func mustPower(t *testing.T, s []record.PowerSample) *PowerData {
	t.Helper()
	pd, err := NewPowerData(s)
	if err != nil {
		t.Fatalf("NewPowerData: %v", err)
	}
	return pd
}

func wantErr(t *testing.T, err error, substrs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error containing %q, got nil", substrs)
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

// trapzData: two devices with irregular samples, given out of order.
//
//	gpu0: t=0 100 W, t=1 200 W, t=3 100 W, t=4 300 W
//	gpu1: t=0.5 50 W, t=2 50 W, t=2.5 150 W, t=5 150 W
func trapzData() []record.PowerSample {
	return []record.PowerSample{
		ps("gpu0", 3, 100), ps("gpu1", 2, 50), ps("gpu0", 0, 100), ps("gpu1", 0.5, 50),
		ps("gpu0", 4, 300), ps("gpu1", 5, 150), ps("gpu0", 1, 200), ps("gpu1", 2.5, 150),
	}
}

func TestEnergyTrapzInterpolatedBoundaries(t *testing.T) {
	pd := mustPower(t, trapzData())
	if got := pd.Devices(); len(got) != 2 || got[0] != "gpu0" || got[1] != "gpu1" {
		t.Fatalf("Devices() = %v, want [gpu0 gpu1] (order of first appearance)", got)
	}
	if s, e := pd.Span(); s != 0 || e != 5 {
		t.Errorf("Span() = %v, %v; want 0, 5", s, e)
	}
	if pd.HasCounter() {
		t.Error("HasCounter() = true for samples without counter")
	}
	cases := []struct {
		name string
		dev  string // "" = all devices
		a, b float64
		want float64
	}{
		// gpu0 on [0.75, 3.5]: p(0.75) = 100 + 100·0.75 = 175, p(3.5) = 100 + 200·0.5 = 200.
		//   [0.75, 1]: (175+200)/2·0.25 = 46.875
		//   [1, 3]:    (200+100)/2·2    = 300
		//   [3, 3.5]:  (100+200)/2·0.5  = 75
		//   total 421.875
		{"gpu0 a,b between samples", "gpu0", 0.75, 3.5, 421.875},
		// gpu1 on [0.75, 3.5]: p(0.75) = 50, p(3.5) = 150.
		//   [0.75, 2]: 50·1.25 = 62.5
		//   [2, 2.5]:  (50+150)/2·0.5 = 50
		//   [2.5, 3.5]: 150·1 = 150
		//   total 262.5
		{"gpu1 a,b between samples", "gpu1", 0.75, 3.5, 262.5},
		// both: 421.875 + 262.5 = 684.375
		{"sum of devices", "", 0.75, 3.5, 684.375},
		// gpu0 inside one segment [1, 3]: p(1.5) = 200 - 50·0.5 = 175, p(2.5) = 125;
		//   (175+125)/2·1 = 150
		{"gpu0 within one segment", "gpu0", 1.5, 2.5, 150},
		// gpu0 on sample times [1, 3]: (200+100)/2·2 = 300
		{"gpu0 on sample times", "gpu0", 1, 3, 300},
		// gpu0 whole range [0, 4]: (100+200)/2·1 + 300 + (100+300)/2·1 = 150+300+200 = 650
		{"gpu0 whole range", "gpu0", 0, 4, 650},
		{"empty interval", "", 2, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got float64
			var err error
			if c.dev == "" {
				got, err = pd.Energy(c.a, c.b, "trapz")
			} else {
				got, err = pd.DeviceEnergy(c.dev, c.a, c.b, "trapz")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, c.want) {
				t.Errorf("energy = %v, want %v", got, c.want)
			}
			if c.dev == "" { // auto without counter = trapz
				if auto, _ := pd.Energy(c.a, c.b, "auto"); auto != got {
					t.Errorf("auto = %v, trapz = %v", auto, got)
				}
			}
		})
	}
}

func TestMeanPowerAndMaxMem(t *testing.T) {
	pd := mustPower(t, trapzData())
	cases := []struct {
		dev  string
		a, b float64
		want float64
	}{
		{"gpu0", 1, 3, 150},       // 300 J / 2 s
		{"gpu0", 0.5, 0.5, 150},   // b == a: p(0.5) = 100 + 100·0.5
		{"gpu1", 2.25, 2.25, 100}, // 50 + (150-50)·0.5
		{"gpu0", 0, 4, 162.5},     // 650 J / 4 s
	}
	for _, c := range cases {
		got, err := pd.MeanPower(c.dev, c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, c.want) {
			t.Errorf("MeanPower(%s, %v, %v) = %v, want %v", c.dev, c.a, c.b, got, c.want)
		}
	}
	if _, err := pd.MeanPower("gpu9", 1, 2); err == nil {
		t.Error("MeanPower of unknown device: no error")
	}

	mem := []record.PowerSample{
		{T: 0, Device: "g", PowerW: 1, MemUsedBytes: 10},
		{T: 1, Device: "g", PowerW: 1, MemUsedBytes: -1},
		{T: 2, Device: "g", PowerW: 1, MemUsedBytes: 30},
		{T: 3, Device: "g", PowerW: 1, MemUsedBytes: 20},
		{T: 4, Device: "g", PowerW: 1, MemUsedBytes: -1},
	}
	pm := mustPower(t, mem)
	for _, c := range []struct {
		a, b   float64
		want   int64
		wantOK bool
	}{
		{0, 4, 30, true},
		{0, 1.5, 10, true},   // samples at 0 (10) and 1 (unknown)
		{2.5, 3, 20, true},   // only the sample at 3
		{3.5, 4, 0, false},   // only an unknown sample
		{1.2, 1.8, 0, false}, // no sample
	} {
		got, ok := pm.MaxMem("g", c.a, c.b)
		if got != c.want || ok != c.wantOK {
			t.Errorf("MaxMem(g, %v, %v) = %v, %v; want %v, %v", c.a, c.b, got, ok, c.want, c.wantOK)
		}
	}
	if _, ok := pm.MaxMem("nope", 0, 4); ok {
		t.Error("MaxMem of unknown device reported ok")
	}
}

// counterData: two devices with counters; gpu0's counter resets between
// t=2 and t=3.
//
//	gpu0: t=0 1000 J, t=1 1100, t=2 1300, t=3 50 (reset), t=4 250
//	gpu1: t=0 0 J, t=2 100, t=4 300
func counterData() []record.PowerSample {
	return []record.PowerSample{
		psc("gpu0", 0, 100, 1000), psc("gpu1", 0, 50, 0),
		psc("gpu0", 1, 100, 1100),
		psc("gpu0", 2, 200, 1300), psc("gpu1", 2, 50, 100),
		psc("gpu0", 3, 200, 50),
		psc("gpu0", 4, 200, 250), psc("gpu1", 4, 100, 300),
	}
}

func TestEnergyCounterWithReset(t *testing.T) {
	pd := mustPower(t, counterData())
	if !pd.HasCounter() {
		t.Fatal("HasCounter() = false")
	}
	resets := pd.CounterResets()
	if len(resets) != 1 || !strings.Contains(resets[0], "gpu0 at t=3") {
		t.Fatalf("CounterResets() = %q, want one reset of gpu0 at t=3", resets)
	}
	cases := []struct {
		name string
		dev  string
		a, b float64
		want float64
	}{
		// gpu0: the drop 1300 → 50 on [2, 3] does not come back (250 < 1300
		// at t=4): a reset; that segment takes its trapezoid energy
		// (200+200)/2·1 = 200 J. Corrected counter: 1000, 1100, 1300, 1500, 1700.
		// C(0.5) = 1000 + 100·0.5 = 1050; C(3.5) = 1500 + 200·0.5 = 1600 → 550
		{"gpu0 across reset", "gpu0", 0.5, 3.5, 550},
		// gpu1: C(0.5) = 100·0.25 = 25; C(3.5) = 100 + 200·0.75 = 250 → 225
		{"gpu1", "gpu1", 0.5, 3.5, 225},
		// sum 550 + 225 = 775
		{"sum", "", 0.5, 3.5, 775},
		// gpu0 on [2.5, 3]: C(2.5) = 1300 + 200·0.5 = 1400, C(3) = 1500 → 100
		{"gpu0 reset segment", "gpu0", 2.5, 3, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got, auto float64
			var err error
			if c.dev == "" {
				got, err = pd.Energy(c.a, c.b, "counter")
				auto, _ = pd.Energy(c.a, c.b, "auto")
			} else {
				got, err = pd.DeviceEnergy(c.dev, c.a, c.b, "counter")
				auto, _ = pd.DeviceEnergy(c.dev, c.a, c.b, "auto")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, c.want) {
				t.Errorf("counter energy = %v, want %v", got, c.want)
			}
			if auto != got {
				t.Errorf("auto = %v, want the counter value %v", auto, got)
			}
		})
	}
	// The same data by trapezoid, gpu1 on [0.5, 3.5]: p = 50 up to t=2, then
	// 50 + 50·(t-2)/2; p(3.5) = 87.5. 50·1.5 + (50+87.5)/2·1.5 = 75 + 103.125 = 178.125
	got, err := pd.DeviceEnergy("gpu1", 0.5, 3.5, "trapz")
	if err != nil || !near(got, 178.125) {
		t.Errorf("gpu1 trapz = %v, %v; want 178.125", got, err)
	}
}

func TestCounterMissingOnOneSample(t *testing.T) {
	s := counterData()
	s = append(s, ps("gpu1", 5, 100)) // gpu1 without counter at t=5
	s = append(s, psc("gpu0", 5, 100, 300))
	pd := mustPower(t, s)
	if pd.HasCounter() {
		t.Fatal("HasCounter() = true although one gpu1 sample lacks a counter")
	}
	_, err := pd.Energy(0.5, 3.5, "counter")
	wantErr(t, err, "gpu1", "counter")
	_, err = pd.DeviceEnergy("gpu1", 0.5, 3.5, "counter")
	wantErr(t, err, "gpu1", "counter")
	// gpu0 still has its counter: 550 as in TestEnergyCounterWithReset.
	if got, err := pd.DeviceEnergy("gpu0", 0.5, 3.5, "counter"); err != nil || !near(got, 550) {
		t.Errorf("gpu0 counter energy = %v, %v; want 550", got, err)
	}
	// auto falls back to trapz: gpu0 on [0, 1]: (100+100)/2·1 = 100;
	// gpu1: (50+50)/2·1 = 50 → 150
	got, err := pd.Energy(0, 1, "auto")
	if err != nil || !near(got, 150) {
		t.Errorf("auto energy = %v, %v; want 150 (trapz)", got, err)
	}
}

func TestPowerDataErrors(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	build := []struct {
		name    string
		samples []record.PowerSample
		want    []string
	}{
		{"empty", nil, []string{"no power samples"}},
		{"NaN power", []record.PowerSample{ps("g", 0, nan)}, []string{"invalid power"}},
		{"Inf power", []record.PowerSample{ps("g", 0, inf)}, []string{"invalid power"}},
		{"negative power", []record.PowerSample{ps("g", 0, 1), ps("g", 1, -3)}, []string{"invalid power", "t=1"}},
		{"NaN time", []record.PowerSample{ps("g", nan, 1)}, []string{"time"}},
		{"Inf time", []record.PowerSample{ps("g", inf, 1)}, []string{"time"}},
		{"NaN counter", []record.PowerSample{psc("g", 0, 1, nan)}, []string{"energy counter"}},
		{"negative counter", []record.PowerSample{psc("g", 0, 1, -1)}, []string{"energy counter"}},
		{"empty device", []record.PowerSample{ps("", 0, 1)}, []string{"empty device"}},
		{"duplicate time", []record.PowerSample{ps("a", 0, 1), ps("b", 1, 1), ps("b", 2, 1), ps("b", 1, 2)},
			[]string{`"b"`, "t=1"}},
	}
	for _, c := range build {
		t.Run("new/"+c.name, func(t *testing.T) {
			pd, err := NewPowerData(c.samples)
			if pd != nil {
				t.Error("non-nil PowerData with error")
			}
			wantErr(t, err, c.want...)
		})
	}

	pd := mustPower(t, trapzData())
	calls := []struct {
		name string
		f    func() (float64, error)
		want []string
	}{
		{"a > b", func() (float64, error) { return pd.Energy(3, 2, "trapz") }, []string{"start after end"}},
		{"before gpu1 starts", func() (float64, error) { return pd.Energy(0.25, 1, "trapz") }, []string{`"gpu1"`, "[0.25, 1]", "[0.5, 5]"}},
		{"after gpu0 ends", func() (float64, error) { return pd.Energy(1, 4.5, "trapz") }, []string{`"gpu0"`, "[0, 4]"}},
		{"NaN bound", func() (float64, error) { return pd.Energy(nan, 1, "trapz") }, []string{"invalid interval"}},
		{"Inf bound", func() (float64, error) { return pd.Energy(1, inf, "trapz") }, []string{"invalid interval"}},
		{"unknown method", func() (float64, error) { return pd.Energy(1, 2, "simpson") }, []string{`"simpson"`, "unknown"}},
		{"empty method", func() (float64, error) { return pd.Energy(1, 2, "") }, []string{"unknown"}},
		{"counter without counter", func() (float64, error) { return pd.Energy(1, 2, "counter") }, []string{"gpu0", "counter"}},
		{"unknown device", func() (float64, error) { return pd.DeviceEnergy("gpu7", 1, 2, "trapz") }, []string{`"gpu7"`, "unknown device"}},
		{"device out of range", func() (float64, error) { return pd.DeviceEnergy("gpu1", 0, 1, "trapz") }, []string{"gpu1"}},
		{"mean power a > b", func() (float64, error) { return pd.MeanPower("gpu0", 2, 1) }, []string{"start after end"}},
		{"mean power out of range", func() (float64, error) { return pd.MeanPower("gpu0", 3, 9) }, []string{"gpu0"}},
		{"nil PowerData", func() (float64, error) { return (*PowerData)(nil).Energy(1, 2, "trapz") }, []string{"no power data"}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f()
			if got != 0 {
				t.Errorf("value %v with error", got)
			}
			wantErr(t, err, c.want...)
		})
	}
}

// randomPower makes devs devices sampled at jittered times over [0, dur],
// with counters.
func randomPower(rng *rand.Rand, devs int, dur float64) []record.PowerSample {
	var out []record.PowerSample
	for d := range devs {
		name := "gpu" + string(rune('0'+d))
		t, e := rng.Float64()*0.5, 0.0
		prev := 0.0
		for t < dur+1 {
			w := 50 + 300*rng.Float64()
			if t > 0 {
				e += (prev + w) / 2 * 0.3
			}
			out = append(out, psc(name, t, w, e))
			prev = w
			t += 0.1 + 0.4*rng.Float64()
		}
		out[len(out)-1].T = dur + 1 + float64(d) // distinct end per device
	}
	return out
}

// allPieces collects what piecesEnergy gives, checking that its blocks
// follow each other.
func allPieces(pd *PowerData, bounds []float64, useCounter bool) ([]float64, error) {
	var out []float64
	var gap error
	err := pd.piecesEnergy(bounds, useCounter, func(from int, energy []float64) {
		if from != len(out) && gap == nil {
			gap = fmt.Errorf("block from piece %d after %d pieces", from, len(out))
		}
		out = append(out, energy...)
	})
	return out, errors.Join(err, gap)
}

// piecesEnergy gives a run's many pieces a block at a time, each piece's
// energy exactly Energy's on it, across the blocks' edges too (the walks
// of a block start where those of the one before arrived).
func TestPiecesEnergyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	pd := mustPower(t, randomPower(rng, 2, 4000))
	n := 2*piecesBlock + 1000 // two whole blocks and part of a third
	bounds := make([]float64, n+1)
	for m := range bounds {
		bounds[m] = 1 + 3990*float64(m)/float64(n)
	}
	for _, method := range []string{"trapz", "counter"} {
		useCounter, _ := pd.resolveMethod(method)
		pieces, err := allPieces(pd, bounds, useCounter)
		if err != nil {
			t.Fatal(err)
		}
		if len(pieces) != n {
			t.Fatalf("%s: %d pieces, want %d", method, len(pieces), n)
		}
		for _, m := range []int{0, piecesBlock - 1, piecesBlock, piecesBlock + 1, 2 * piecesBlock, n - 1} {
			e, err := pd.Energy(bounds[m], bounds[m+1], method)
			if err != nil {
				t.Fatal(err)
			}
			if pieces[m] != e {
				t.Errorf("%s piece %d: %v, Energy %v", method, m, pieces[m], e)
			}
		}
	}
}

// Energy is additive, and piecesEnergy (used by Attribute) equals Energy on
// each piece exactly.
func TestEnergyAdditiveAndPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	pd := mustPower(t, randomPower(rng, 3, 50))
	for _, method := range []string{"trapz", "counter"} {
		bounds := []float64{1}
		for bounds[len(bounds)-1] < 49 {
			step := rng.Float64() * 0.7
			if rng.IntN(4) == 0 {
				step = 1e-7 // very short pieces
			}
			bounds = append(bounds, bounds[len(bounds)-1]+step)
		}
		useCounter, _ := pd.resolveMethod(method)
		pieces, err := allPieces(pd, bounds, useCounter)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for m := range pieces {
			e, err := pd.Energy(bounds[m], bounds[m+1], method)
			if err != nil {
				t.Fatal(err)
			}
			if e != pieces[m] {
				t.Fatalf("%s piece %d: piecesEnergy %v != Energy %v", method, m, pieces[m], e)
			}
			if e < 0 {
				t.Fatalf("%s piece %d: negative energy %v", method, m, e)
			}
			sum += e
		}
		whole, err := pd.Energy(bounds[0], bounds[len(bounds)-1], method)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sum-whole) > 1e-9*whole {
			t.Errorf("%s: sum of pieces %v != whole %v", method, sum, whole)
		}
	}
}

// counter100 is one device "g" at a flat 100 W sampled every second on
// [0, 10], with counter readings e[i] at t=i. The true energy on [0, 10]
// is 100 W × 10 s = 1000 J, and every segment's trapezoid energy is 100 J.
func counter100(e ...float64) []record.PowerSample {
	out := make([]record.PowerSample, len(e))
	for i, v := range e {
		out[i] = psc("g", float64(i), 100, v)
	}
	return out
}

func TestCounterGlitches(t *testing.T) {
	cases := []struct {
		name    string
		counter []float64
		// want is the counter energy on [0, 10] and on [4.5, 5.5].
		want, wantMid float64
		glitches      []string // each as kind@from-to
	}{
		{
			// A clean counter: 100 J a second.
			name:    "clean",
			counter: []float64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000},
			want:    1000, wantMid: 100,
		},
		{
			// One reading of 0 at t=5 (the glitch). Without the
			// fix the drop was taken as a reset: offset 400 from t=5 on,
			// 1400 J on [0, 10]. Now 0 < 400 and 600 ≥ 400: a backward
			// step; segments [4, 5] and [5, 6] take 100 J each (trapezoid):
			// corrected 0 … 400, 500, 600 … 1000 → 1000 J; C(4.5) = 450,
			// C(5.5) = 550 → 100 J.
			name:    "one zero reading",
			counter: []float64{0, 100, 200, 300, 400, 0, 600, 700, 800, 900, 1000},
			want:    1000, wantMid: 100,
			glitches: []string{"backward@4-6"},
		},
		{
			// Frozen at 400 from t=4 to t=7 while drawing 100 W, then it
			// goes on without catching up. Without the fix: 700 J (30 %
			// less). Frozen run: segments [4,5], [5,6], [6,7], and the one
			// after it, [7,8], take 100 J each: 400 + 4·100 = 800 at t=8,
			// then +100 +100 → 1000 J. C(4.5) = 450, C(5.5) = 550 → 100 J.
			name:    "frozen, no catch-up",
			counter: []float64{0, 100, 200, 300, 400, 400, 400, 400, 500, 600, 700},
			want:    1000, wantMid: 100,
			glitches: []string{"frozen@4-8"},
		},
		{
			// Frozen from t=4 to t=7, then catches up at t=8 (800). Without
			// the fix: 1000 J in all but 0 J on [4.5, 5.5]. With it: the
			// catch-up segment [7, 8] takes 100 J, not 400: 1000 J, and
			// 100 J on [4.5, 5.5].
			name:    "frozen, catch-up",
			counter: []float64{0, 100, 200, 300, 400, 400, 400, 400, 800, 900, 1000},
			want:    1000, wantMid: 100,
			glitches: []string{"frozen@4-8"},
		},
		{
			// A reset to 0 at t=5 that stays low: 0 < 400 and 100 < 400.
			// Segment [4, 5] takes 100 J, then +100 a second from 0:
			// corrected 0 … 400, 500, 600 … 1000 → 1000 J.
			name:    "reset",
			counter: []float64{0, 100, 200, 300, 400, 0, 100, 200, 300, 400, 500},
			want:    1000, wantMid: 100,
			glitches: []string{"reset@4-5"},
		},
		{
			// One reading 10^6 J too high at t=5, then back (the hostile
			// archive's spike). Without the fix the up-step was kept and
			// only the way down fell back to the trapezoid: 400 +
			// 1000100 + 100 + 400 = 1001000 J. Now the drop 1000500 → 600
			// is explained by sample 4 (400 ≤ 600): over [4, 6] a reset
			// gives 1000100 + 100 J, a spike 100 + 100 J, the trapezoid
			// 200 J: a spike; segments [4, 5], [5, 6] take 100 J each →
			// 1000 J, C(4.5) = 450, C(5.5) = 550.
			name:    "spike of 10^6 J",
			counter: []float64{0, 100, 200, 300, 400, 1000500, 600, 700, 800, 900, 1000},
			want:    1000, wantMid: 100,
			glitches: []string{"spike@4-6"},
		},
		{
			// Two readings high (t=5, 6), then back: the drop at t=7 is
			// explained by sample 4 (400 ≤ 700); over [4, 7] a spike
			// gives 300 J = the trapezoid: segments [4, 7] take 100 J
			// each → 1000 J.
			name:    "two-sample spike",
			counter: []float64{0, 100, 200, 300, 400, 500000, 600000, 700, 800, 900, 1000},
			want:    1000, wantMid: 100,
			glitches: []string{"spike@4-7"},
		},
		{
			// A counter stepping back once as a realtime replay records
			// it: interpolated readings on the way down and back up
			// (500, 300, 100, 450, 800). Without the fix: reset on
			// [5, 6], backward on [6, 8], and the rest of the jump back,
			// 450 → 800, kept: 500 + 100 + 200 + 350 + 100 = 1250 J
			// (the 265.8 W for 100 W). Now the drop at t=6 looks
			// ahead to the first reading ≥ 500 (t=9) and back to the
			// last ≤ 300 (t=3); over [3, 9] (trapezoid 600 J) a reset
			// gives 100+100+100+100+350+350 = 1100 J, the excursion
			// 100+100+4·100 = 600 J, a spike 3·100+100+350+350 = 1100 J:
			// the excursion; [5, 9] take 100 J each → 1000 J.
			name:    "stepped back once, replayed",
			counter: []float64{0, 100, 200, 300, 400, 500, 300, 100, 450, 800, 900},
			want:    1000, wantMid: 100,
			glitches: []string{"backward@5-9"},
		},
		{
			// A reset at the last sample: 1000 → 5. Segment [9, 10] takes
			// 100 J → 1000 J.
			name:    "reset at the end",
			counter: []float64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 5},
			want:    1000, wantMid: 100,
			glitches: []string{"reset@9-10"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pd := mustPower(t, counter100(c.counter...))
			got, err := pd.Energy(0, 10, MethodCounter)
			if err != nil || !near(got, c.want) {
				t.Errorf("counter energy on [0, 10] = %v, %v; want %v", got, err, c.want)
			}
			mid, err := pd.Energy(4.5, 5.5, MethodCounter)
			if err != nil || !near(mid, c.wantMid) {
				t.Errorf("counter energy on [4.5, 5.5] = %v, %v; want %v", mid, err, c.wantMid)
			}
			var gs []string
			for _, g := range pd.CounterGlitches(math.Inf(-1), math.Inf(1)) {
				gs = append(gs, g.Kind+"@"+fmtT(g.From)+"-"+fmtT(g.To))
				if !strings.Contains(g.String(), "trapezoid used") || !strings.Contains(g.String(), "device g") {
					t.Errorf("glitch note %q does not say the device and the fallback", g)
				}
			}
			if strings.Join(gs, ",") != strings.Join(c.glitches, ",") {
				t.Errorf("glitches = %v, want %v", gs, c.glitches)
			}
		})
	}
}

// A counter standing still while the device draws no power is not frozen.
func TestCounterStillAtZeroPower(t *testing.T) {
	s := []record.PowerSample{psc("g", 0, 0, 50), psc("g", 1, 0, 50), psc("g", 2, 100, 150)}
	pd := mustPower(t, s)
	if gs := pd.CounterGlitches(math.Inf(-1), math.Inf(1)); len(gs) != 0 {
		t.Errorf("glitches = %v, want none", gs)
	}
	// 150 - 50 = 100 J.
	if got, _ := pd.Energy(0, 2, MethodCounter); !near(got, 100) {
		t.Errorf("counter energy = %v, want 100", got)
	}
}

func TestCounterVsTrapz(t *testing.T) {
	// Counter grows 110 J a second at a flat 100 W: on [0, 10] counter
	// 1100 J, trapezoid 1000 J, relative difference 100 / 1100 = 0.0909…
	e := make([]float64, 11)
	for i := range e {
		e[i] = 110 * float64(i)
	}
	// A backward step at t=2 (reading 0): segments [1, 2], [2, 3] take the
	// trapezoid's 100 J each instead of 110: counter 1100 - 20 = 1080 J,
	// relative difference 80 / 1080.
	e[2] = 0
	pd := mustPower(t, counter100(e...))
	cc, err := pd.CounterVsTrapz(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !near(cc.CounterJ, 1080) || !near(cc.TrapzJ, 1000) || !near(cc.RelDiff, 80.0/1080) {
		t.Errorf("CounterVsTrapz = %+v, want counter 1080, trapz 1000, rel diff %v", cc, 80.0/1080)
	}
	if len(cc.Glitches) != 1 || cc.Glitches[0].Kind != GlitchBackward {
		t.Errorf("glitches = %v, want one backward step", cc.Glitches)
	}
	// [5, 10] holds no glitch: 550 vs 500 J, 50 / 550.
	cc, err = pd.CounterVsTrapz(5, 10)
	if err != nil || len(cc.Glitches) != 0 || !near(cc.RelDiff, 50.0/550) {
		t.Errorf("CounterVsTrapz(5, 10) = %+v, %v; want no glitch, rel diff %v", cc, err, 50.0/550)
	}
	// Without a counter it is an error.
	pt := mustPower(t, []record.PowerSample{ps("g", 0, 1), ps("g", 1, 1)})
	_, err = pt.CounterVsTrapz(0, 1)
	wantErr(t, err, "counter")
}

// FuzzCounterGlitches: any counter readings (at 100 W, 1 s apart) give a
// corrected counter that never decreases and finite, non-negative energy;
// a clean counter with one glitch (a spike up or a dip down of any size,
// over one to three samples, that comes back) gives exactly the clean
// energy, 100 J a second.
func FuzzCounterGlitches(f *testing.F) {
	f.Add([]byte{3, 1, 200}, 5, 1, 1e6)
	f.Add([]byte{0, 255, 7}, 2, 3, -450.0)
	f.Fuzz(func(t *testing.T, noise []byte, at, width int, size float64) {
		if len(noise) > 64 || math.IsNaN(size) || math.IsInf(size, 0) || math.Abs(size) > 1e12 {
			return
		}
		// Arbitrary readings: the invariants hold.
		e := make([]float64, len(noise)+2)
		for i := range e {
			if i >= 2 {
				e[i] = float64(noise[i-2]) * 10
			}
		}
		pd := mustPower(t, counter100(e...))
		prev := math.Inf(-1)
		for _, v := range pd.devs[0].e {
			if v < prev || math.IsNaN(v) {
				t.Fatalf("corrected counter %v decreases", pd.devs[0].e)
			}
			prev = v
		}
		if got, err := pd.Energy(0, float64(len(e)-1), MethodCounter); err != nil || got < 0 {
			t.Fatalf("energy = %v, %v", got, err)
		}
		// One glitch on a clean counter of 21 samples: samples at+1 …
		// at+width read size J off, then the counter is back.
		at, width = 1+abs(at)%15, 1+abs(width)%3
		clean := make([]float64, 21)
		for i := range clean {
			clean[i] = 1e6 + 100*float64(i)
		}
		g := slices.Clone(clean)
		if size < 0 && -size > 100*float64(width) && -size <= 1e6 {
			// a dip reads below the level before it (and ≥ 0)
			for i := at + 1; i <= at+width; i++ {
				g[i] += size
			}
		} else if size > 100*float64(width+1) {
			for i := at + 1; i <= at+width; i++ {
				g[i] += size
			}
		} else {
			return
		}
		pg := mustPower(t, counter100(g...))
		if got, err := pg.Energy(0, 20, MethodCounter); err != nil || math.Abs(got-2000) > 1e-6*max(1, math.Abs(size)) {
			t.Fatalf("glitch of %v J at samples %d…%d: energy %v, %v; want 2000 J", size, at+1, at+width, got, err)
		}
	})
}

func abs(x int) int {
	if x < 0 {
		if x == math.MinInt {
			return 0
		}
		return -x
	}
	return x
}
