//go:build !linux

package loadgen

import "time"

// newIdleWait returns a wait of d on a timer (on Linux it also waits for
// the scheduler's next network poll; see idle_linux.go).
func newIdleWait() (wait func(d time.Duration), close func()) {
	return time.Sleep, func() {}
}
