package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

func TestSweepValues(t *testing.T) {
	params := map[string]any{"burst": 1, "sweep_burst": "1, 2,4", "context_tokens": 0}
	for _, c := range []struct {
		spec, wantErr string
		want          []string
	}{
		{"burst", "", []string{"1", "2", "4"}},
		{"burst=8,16", "", []string{"8", "16"}},
		{"context_tokens", "declare the string parameter sweep_context_tokens", nil},
		{"nope=1", `no parameter "nope"`, nil},
		{"burst=,", "no values", nil},
	} {
		_, got, err := sweepValues(c.spec, params)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.spec, err, c.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %v %v, want %v", c.spec, got, err, c.want)
		}
	}
}

// rampSource reads a power series, one value per Read, summed over two
// devices (half each); the last value repeats.
type rampSource struct {
	w []float64
	i int
}

func (s *rampSource) Name() string { return "ramp" }
func (s *rampSource) Devices(context.Context) ([]record.Device, error) {
	return nil, nil
}
func (s *rampSource) Read(context.Context) ([]telemetry.Reading, error) {
	w := s.w[min(s.i, len(s.w)-1)]
	s.i++
	return []telemetry.Reading{{Device: "0", PowerW: w / 2}, {Device: "1", PowerW: w / 2}}, nil
}
func (s *rampSource) Close() error { return nil }

// The cooldown waits for the summed power to stay within tolerance of the
// idle level for the hold, or gives up at the maximum wait. The fake
// clock advances by the poll (1 s) at each sleep.
func TestWaitCooldown(t *testing.T) {
	p := cooldownParams{Enabled: true, Tolerance: 0.10, HoldS: 2, MaxWaitS: 10, Poll: 1}
	cases := []struct {
		name    string
		w       []float64
		reached bool
		end     float64
	}{
		// idle 100 W, limit 110 W. Readings at t = 0, 1, 2, ...: 300, 200,
		// 108 (under from t = 2), 109, 105 (t = 4: held 2 s) → reached at 4.
		{"reached", []float64{300, 200, 108, 109, 105}, true, 4},
		// 115 W at t = 3 restarts the hold: under again from 4, held at 6.
		{"hold restarts", []float64{300, 108, 109, 115, 100, 100, 100}, true, 6},
		// never under 110 W: gives up at t = 10 (the maximum wait).
		{"not reached", []float64{300, 250, 200, 150, 120}, false, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := 0.0
			sleep := func(_ context.Context, d time.Duration) error { now += d.Seconds(); return nil }
			res, err := waitCooldown(context.Background(), &rampSource{w: c.w}, func() float64 { return now }, 100, p, sleep)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reached != c.reached || res.End != c.end || res.Start != 0 || res.Note == "" {
				t.Errorf("got %+v, want reached %v at t = %v", res, c.reached, c.end)
			}
		})
	}
	// The idle level is the mean of the readings over cooldown_idle: 3
	// reads of 90, 100, 110 W → 100 W.
	p.IdleS = 3
	now := 0.0
	idle, err := idlePower(context.Background(), &rampSource{w: []float64{90, 100, 110}}, p,
		func(_ context.Context, d time.Duration) error { now += d.Seconds(); return nil })
	if err != nil || idle != 100 {
		t.Errorf("idle = %v, %v; want 100", idle, err)
	}
}
