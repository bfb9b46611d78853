package runclock

import (
	"testing"
	"time"
)

// TestAtMapsMonotonicTime: times taken during the run map to the start's
// Unix seconds plus the monotonic time elapsed, whatever their wall
// reading says (here one without a monotonic reading, whose wall reading
// is 1 h off, still maps by its difference to the start).
func TestAtMapsMonotonicTime(t *testing.T) {
	c := New()
	base := float64(c.start.UnixNano()) / 1e9
	for _, tc := range []struct {
		name string
		t    time.Time
		want float64
	}{
		{"the start", c.start, base},
		// 1.5 s after the start: base + 1.5 (1.5 is exact in binary).
		{"1.5 s later", c.start.Add(1500 * time.Millisecond), base + 1.5},
		{"0.25 s before", c.start.Add(-250 * time.Millisecond), base - 0.25},
	} {
		if got := c.At(tc.t); got != tc.want {
			t.Errorf("%s: At = %.9f, want %.9f", tc.name, got, tc.want)
		}
	}
}

// TestNowNeverGoesBack: successive readings never decrease, and the first
// is within a second of the wall clock.
func TestNowNeverGoesBack(t *testing.T) {
	now := Func()
	prev := now()
	if wall := float64(time.Now().UnixNano()) / 1e9; prev < wall-1 || prev > wall+1 {
		t.Fatalf("clock reads %.3f, wall clock %.3f", prev, wall)
	}
	for i := range 10000 {
		if got := now(); got < prev {
			t.Fatalf("reading %d: %.9f after %.9f", i, got, prev)
		} else {
			prev = got
		}
	}
}

func TestOffsetOfOneClock(t *testing.T) {
	a := time.Now()
	for _, tc := range []struct {
		name string
		a, b time.Time
	}{
		// Adding to a time moves its wall and monotonic readings alike.
		{"monotonic readings", a, a.Add(3 * time.Second)},
		// Without a monotonic reading the wall difference is all there
		// is: b.Sub(a) is then the wall difference too, so still 0.
		{"wall readings only", a.Round(0), a.Round(0).Add(time.Second)},
	} {
		if got := Offset(tc.a, tc.b); got != 0 {
			t.Errorf("%s: Offset = %v, want 0", tc.name, got)
		}
	}
}
