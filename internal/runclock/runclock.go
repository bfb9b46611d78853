// Package runclock is the run's one clock: Go's monotonic clock mapped to
// Unix time once, when the clock starts, so that every time of a run
// (request times, power samples, stage marks, a test server's writes) is
// read off one time base, never goes backwards and is immune to steps of
// the wall clock. The executor, the engine clients and the test servers
// all use it.
package runclock

import "time"

// Clock is a run clock. Its zero value is not usable: start one with New.
type Clock struct {
	start time.Time // carries Go's monotonic reading
	base  float64   // start as Unix seconds
}

// New starts a clock now.
func New() *Clock {
	start := time.Now()
	return &Clock{start: start, base: float64(start.UnixNano()) / 1e9}
}

// Func starts a clock now and returns its Now, for the clients and servers
// that take a clock as a function of Unix seconds.
func Func() func() float64 { return New().Now }

// Now returns the current time as Unix seconds: the wall time when the
// clock started plus the monotonic time elapsed since.
func (c *Clock) Now() float64 { return c.base + time.Since(c.start).Seconds() }

// At converts a time.Time taken while the clock runs (with a monotonic
// reading, as time.Now gives) to the clock's Unix seconds.
func (c *Clock) At(t time.Time) float64 { return c.base + t.Sub(c.start).Seconds() }

// Offset is how far the wall clock moved against the monotonic clock from
// a to b (wall elapsed minus monotonic elapsed, in seconds): a clock
// started at a reads Offset(a, b) seconds less than one started at b, at
// every instant. Both times must carry monotonic readings (time.Now).
func Offset(a, b time.Time) float64 {
	return b.Round(0).Sub(a.Round(0)).Seconds() - b.Sub(a).Seconds()
}
