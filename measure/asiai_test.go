package measure

import (
	"math"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestMeanCI95(t *testing.T) {
	cases := []struct {
		name    string
		xs      []float64
		want    float64
		wantErr bool
	}{
		// xs = 10, 12, 14: mean 12, deviations -2, 0, 2, s² = 8/2 = 4, s = 2;
		// t(0.975, 2) = 4.303; half = 4.303 · 2 / √3 = 4.968677...
		{"three values", []float64{10, 12, 14}, 4.303 * 2 / math.Sqrt(3), false},
		// xs = 1, 3: mean 2, s² = 2/1 = 2, s = √2; t(0.975, 1) = 12.706;
		// half = 12.706 · √2 / √2 = 12.706.
		{"two values", []float64{1, 3}, 12.706, false},
		// identical values: s = 0, half-width 0.
		{"no spread", []float64{5, 5, 5, 5}, 0, false},
		{"one value", []float64{5}, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MeanCI95(c.xs)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if !c.wantErr && math.Abs(got-c.want) > 1e-9 {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestTCritical95(t *testing.T) {
	// df 30 from the table; df 60: 1.959964 + (1.959964³ + 1.959964) / 240
	// = 1.959964 + (7.529121 + 1.959964) / 240 = 1.959964 + 0.039538
	// = 1.999502 (exact 2.000298).
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {30, 2.042}, {60, 1.999502}} {
		got, err := TCritical95(c.df)
		if err != nil || math.Abs(got-c.want) > 1e-6 {
			t.Errorf("df %d: got %v, %v; want %v", c.df, got, err, c.want)
		}
	}
	if _, err := TCritical95(0); err == nil {
		t.Error("df 0: want an error")
	}
}

func TestPowerReadings(t *testing.T) {
	s := func(tm float64, dev string, w float64) record.PowerSample {
		return record.PowerSample{T: tm, Device: dev, PowerW: w}
	}
	pd, err := NewPowerData([]record.PowerSample{
		s(0, "0", 0), s(1, "0", 0), s(2, "0", 30), s(3, "0", 0),
		s(0, "1", 0), s(1, "1", 0), s(2, "1", 0), s(3, "1", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		a, b float64
		want int
	}{
		{0, 3, 1},   // only device 0 at t=2 reads above 0 W
		{0, 1.5, 0}, // every reading in the window is 0 W: no reading
		{2, 2, 1},
		{3, 2, 0}, // reversed interval
	}
	for _, c := range cases {
		if got := pd.PowerReadings(c.a, c.b); got != c.want {
			t.Errorf("[%v, %v]: got %d, want %d", c.a, c.b, got, c.want)
		}
	}
	var none *PowerData
	if none.PowerReadings(0, 1) != 0 {
		t.Error("nil power data: want 0")
	}
}
