package measure

import (
	"math"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestITL(t *testing.T) {
	tests := []struct {
		name string
		reqs []*record.Request
		want []float64
	}{
		{
			name: "one token per chunk: raw gaps",
			// gaps 10.1-10.0 = 0.1, 10.3-10.1 = 0.2
			reqs: []*record.Request{{ID: "a", OK: true, TokenTimes: []float64{10, 10.1, 10.3}}},
			want: []float64{0.1, 0.2},
		},
		{
			name: "a chunk of 4 tokens divides its gap by 4",
			// 0.2/1 = 0.2; (1.0-0.2)/4 = 0.2; (1.3-1.0)/2 = 0.15
			reqs: []*record.Request{{ID: "a", OK: true, TokenTimes: []float64{0, 0.2, 1.0, 1.3}, TokenCounts: []int{1, 1, 4, 2}}},
			want: []float64{0.2, 0.2, 0.15},
		},
		{
			name: "an empty chunk adds its gap to the next",
			// (0.5-0)/1 skipped chunk at 0.2 with 0 tokens → 0.5; (0.9-0.5)/2 = 0.2
			reqs: []*record.Request{{ID: "a", OK: true, TokenTimes: []float64{0, 0.2, 0.5, 0.9}, TokenCounts: []int{1, 0, 1, 2}}},
			want: []float64{0.5, 0.2},
		},
		{
			name: "failed, single-chunk and timeless requests add nothing; pooled in order",
			reqs: []*record.Request{
				{ID: "f", OK: false, TokenTimes: []float64{0, 1}},
				{ID: "one", OK: true, TokenTimes: []float64{5}},
				{ID: "none", OK: true},
				{ID: "b", OK: true, TokenTimes: []float64{2, 2.5}},
				{ID: "c", OK: true, TokenTimes: []float64{3, 3.25}},
			},
			want: []float64{0.5, 0.25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ITL(tt.reqs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-12 {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestITLErrors(t *testing.T) {
	for name, r := range map[string]*record.Request{
		"counts length":  {ID: "a", OK: true, TokenTimes: []float64{0, 1}, TokenCounts: []int{1}},
		"time backwards": {ID: "a", OK: true, TokenTimes: []float64{1, 0.5}},
		"negative count": {ID: "a", OK: true, TokenTimes: []float64{0, 1}, TokenCounts: []int{1, -1}},
	} {
		if _, err := ITL([]*record.Request{r}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestBaselineStats(t *testing.T) {
	mb := int64(1 << 20)
	samples := []record.PowerSample{
		// gpu0: powers 90, 110, 100, 100 inside [0, 3]; a 500 W sample at
		// t=4 is outside. mean 100, deviations -10, 10, 0, 0: variance
		// 200/4 = 50, std √50 = 7.0711, CV 0.070711.
		{T: 0, Device: "gpu0", PowerW: 90, MemUsedBytes: 10 * mb},
		{T: 1, Device: "gpu0", PowerW: 110, MemUsedBytes: 30 * mb},
		{T: 2, Device: "gpu0", PowerW: 100, MemUsedBytes: 20 * mb},
		{T: 3, Device: "gpu0", PowerW: 100, MemUsedBytes: 20 * mb},
		{T: 4, Device: "gpu0", PowerW: 500, MemUsedBytes: 900 * mb},
		// gpu1: constant 60 W, memory unknown: CV 0, mem -1.
		{T: 0, Device: "gpu1", PowerW: 60, MemUsedBytes: -1},
		{T: 1.5, Device: "gpu1", PowerW: 60, MemUsedBytes: -1},
		{T: 3, Device: "gpu1", PowerW: 60, MemUsedBytes: -1},
		{T: 4, Device: "gpu1", PowerW: 60, MemUsedBytes: -1},
	}
	pd, err := NewPowerData(samples)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pd.BaselineStats(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	g0 := st["gpu0"]
	if g0.Samples != 4 || math.Abs(g0.PowerCV-math.Sqrt(50)/100) > 1e-12 || g0.MemMaxBytes != 30*mb {
		t.Errorf("gpu0 = %+v, want 4 samples, CV 0.070711, mem 30 MiB", g0)
	}
	g1 := st["gpu1"]
	if g1.Samples != 3 || g1.PowerCV != 0 || g1.MemMaxBytes != -1 {
		t.Errorf("gpu1 = %+v, want 3 samples, CV 0, mem -1", g1)
	}
	if _, err := pd.BaselineStats(3, 0); err == nil {
		t.Error("reversed interval: no error")
	}
}
