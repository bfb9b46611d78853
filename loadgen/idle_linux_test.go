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
// the first scheduling point past d, ahead of all but one of them, every
// time. Sysmon also polls when the last poll is 10 ms old, which a
// process kept off its core by other work can reach while they run, so
// one round of five in which all of them ran before the wait ended is
// enough.
func TestIdleWaitEndsAfterRunnableWork(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	wait, closeWait := newIdleWait()
	defer closeWait()
	// A wait with nothing to run ends with a poll: the next ones start
	// less than sysmon's 10 ms after the last poll.
	wait(time.Microsecond)
	const n = 100
	var seen []int64
	for range 5 {
		var ran atomic.Int64
		for range n {
			go func() {
				x := 0
				for i := range 1000 { // about a microsecond each
					x += i
				}
				if x > 0 {
					ran.Add(1)
				}
			}()
		}
		wait(time.Microsecond)
		got := ran.Load()
		if got == n {
			return
		}
		seen = append(seen, got)
		time.Sleep(time.Millisecond) // let the rest finish
	}
	t.Errorf("in every round the wait ended before all %d runnable goroutines had run: %v ran", n, seen)
}
