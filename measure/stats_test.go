package measure

import (
	"math"
	"slices"
	"testing"
)

func TestStats(t *testing.T) {
	classic := []float64{2, 4, 4, 4, 5, 5, 7, 9} // mean 5, Σ(x-5)² = 9+1+1+1+0+0+4+16 = 32
	cases := []struct {
		name string
		f    func() (float64, error)
		want float64
	}{
		{"mean", func() (float64, error) { return Mean(classic) }, 5},                              // 40/8
		{"std", func() (float64, error) { return Std(classic) }, 2},                                // √(32/8)
		{"sample std", func() (float64, error) { return SampleStd(classic) }, math.Sqrt(32.0 / 7)}, // √(32/7) ≈ 2.138
		{"cv", func() (float64, error) { return CV(classic) }, 0.4},                                // 2/5
		// sorted [1 2 3 4], rank 0.5·3 = 1.5 → 2 + 0.5·(3-2) = 2.5
		{"percentile 50 even", func() (float64, error) { return Percentile([]float64{4, 1, 3, 2}, 50) }, 2.5},
		{"median even", func() (float64, error) { return Median([]float64{4, 1, 3, 2}) }, 2.5},
		// sorted [1 3 7], rank 1 → 3
		{"median odd", func() (float64, error) { return Median([]float64{7, 1, 3}) }, 3},
		// rank 0.9·3 = 2.7 → 3 + 0.7·(4-3) = 3.7
		{"percentile 90", func() (float64, error) { return Percentile([]float64{4, 1, 3, 2}, 90) }, 3.7},
		{"percentile 0", func() (float64, error) { return Percentile([]float64{4, 1, 3, 2}, 0) }, 1},
		{"percentile 100", func() (float64, error) { return Percentile([]float64{4, 1, 3, 2}, 100) }, 4},
		{"percentile single", func() (float64, error) { return Percentile([]float64{7}, 37) }, 7},
		// Spearman with a tie: x = [1,2,2,3] → ranks [1, 2.5, 2.5, 4];
		// y = [10,20,30,40] → [1,2,3,4]. Mean rank 2.5 for both.
		// dx = [-1.5, 0, 0, 1.5], dy = [-1.5, -0.5, 0.5, 1.5]
		// Σdxdy = 2.25 + 0 + 0 + 2.25 = 4.5; Σdx² = 4.5; Σdy² = 5
		// ρ = 4.5/√(4.5·5) = √(4.5/5) = √0.9 ≈ 0.948683
		{"spearman tie", func() (float64, error) { return Spearman([]float64{1, 2, 2, 3}, []float64{10, 20, 30, 40}) }, math.Sqrt(0.9)},
		// reversed order: ranks [3,2,1] vs [1,2,3] → -1
		{"spearman reversed", func() (float64, error) { return Spearman([]float64{3, 2, 1}, []float64{5, 6, 7}) }, -1},
		// asiai M8: prompt A runs 10, 12, 14: mean 12, var (4+0+4)/3 = 8/3;
		// prompt B runs 20, 21, 23: mean 64/3, deviations -4/3, -1/3, 5/3,
		// squares 16/9 + 1/9 + 25/9 = 42/9, var 14/9; prompt C: one run,
		// ignored. pooled = (8/3 + 14/9)/2 = (24/9 + 14/9)/2 = 19/9;
		// std = √19/3 ≈ 1.452966
		{"pooled std asiai", func() (float64, error) {
			return PooledStd([]float64{10, 20, 30, 12, 21, 14, 23}, []string{"A", "B", "C", "A", "B", "A", "B"})
		}, math.Sqrt(19) / 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f()
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestPercentileDoesNotModifyInput(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	if _, err := Percentile(xs, 50); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(xs, []float64{4, 1, 3, 2}) {
		t.Errorf("input changed to %v", xs)
	}
}

func TestRanks(t *testing.T) {
	// 10 → 1; the two 20s share ranks 2 and 3 → 2.5; 5 → ... sorted:
	// 5 (1), 10 (2), 20, 20 (3.5, 3.5), 30 (5)
	got := Ranks([]float64{20, 10, 30, 20, 5})
	want := []float64{3.5, 2, 5, 3.5, 1}
	if !slices.Equal(got, want) {
		t.Errorf("Ranks = %v, want %v", got, want)
	}
	if got := Ranks(nil); len(got) != 0 {
		t.Errorf("Ranks(nil) = %v", got)
	}
}

func TestStatsErrors(t *testing.T) {
	nan := []float64{1, math.NaN()}
	inf := []float64{1, math.Inf(-1)}
	cases := []struct {
		name string
		f    func() (float64, error)
	}{
		{"mean empty", func() (float64, error) { return Mean(nil) }},
		{"mean NaN", func() (float64, error) { return Mean(nan) }},
		{"mean Inf", func() (float64, error) { return Mean(inf) }},
		{"mean overflow", func() (float64, error) { return Mean([]float64{math.MaxFloat64, math.MaxFloat64}) }},
		{"percentile empty", func() (float64, error) { return Percentile(nil, 50) }},
		{"percentile NaN", func() (float64, error) { return Percentile(nan, 50) }},
		{"percentile -1", func() (float64, error) { return Percentile([]float64{1}, -1) }},
		{"percentile 101", func() (float64, error) { return Percentile([]float64{1}, 101) }},
		{"percentile pct NaN", func() (float64, error) { return Percentile([]float64{1}, math.NaN()) }},
		{"median empty", func() (float64, error) { return Median([]float64{}) }},
		{"std empty", func() (float64, error) { return Std(nil) }},
		{"std NaN", func() (float64, error) { return Std(nan) }},
		{"sample std one", func() (float64, error) { return SampleStd([]float64{3}) }},
		{"sample std empty", func() (float64, error) { return SampleStd(nil) }},
		{"cv mean 0", func() (float64, error) { return CV([]float64{-1, 1}) }},
		{"cv empty", func() (float64, error) { return CV(nil) }},
		{"pooled no group ≥ 2", func() (float64, error) { return PooledStd([]float64{1, 2}, []string{"a", "b"}) }},
		{"pooled length mismatch", func() (float64, error) { return PooledStd([]float64{1, 2}, []string{"a"}) }},
		{"pooled NaN", func() (float64, error) { return PooledStd(nan, []string{"a", "a"}) }},
		{"pooled empty", func() (float64, error) { return PooledStd(nil, nil) }},
		{"spearman one pair", func() (float64, error) { return Spearman([]float64{1}, []float64{2}) }},
		{"spearman constant", func() (float64, error) { return Spearman([]float64{1, 1, 1}, []float64{1, 2, 3}) }},
		{"spearman length", func() (float64, error) { return Spearman([]float64{1, 2}, []float64{1, 2, 3}) }},
		{"spearman NaN", func() (float64, error) { return Spearman(nan, []float64{1, 2}) }},
		{"spearman empty", func() (float64, error) { return Spearman(nil, nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f()
			if err == nil {
				t.Fatalf("no error, value %v", got)
			}
			if got != 0 {
				t.Errorf("value %v with error", got)
			}
		})
	}
}
