package loadgen

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWaitEndsAfterRunnableWork: on one processor, the wait ends only
// once the goroutines that were runnable have run (the scheduler polls
// when it has nothing else to run). A timer's wait (time.Sleep) ends at
// the first scheduling point past d, ahead of most of them.
func TestIdleWaitEndsAfterRunnableWork(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	wait, closeWait := newIdleWait()
	defer closeWait()
	// A wait with nothing to run ends with a poll: the next ones start
	// less than sysmon's 10 ms after the last poll, so that only the
	// scheduler's own polls can end them.
	wait(time.Microsecond)
	const n = 200
	for round := range 3 {
		var ran atomic.Int64
		for range n {
			go func() {
				x := 0
				for i := range 2000 { // a few µs each
					x += i
				}
				if x > 0 {
					ran.Add(1)
				}
			}()
		}
		wait(time.Microsecond)
		if got := ran.Load(); got != n {
			t.Errorf("round %d: the wait ended when %d of %d runnable goroutines had run", round, got, n)
		}
	}
}
