package loadgen

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// newIdleWait returns a wait that ends once d has passed and the Go
// scheduler has then polled the network: a timer file descriptor, armed
// for d once the goroutine is about to park on it in the runtime's
// poller. A goroutine parked in the poller is woken by the poll that
// finds its descriptor ready, the same poll that wakes the readers of the
// connections whose data has arrived, and the scheduler polls when it
// finds no goroutine to run (or from sysmon every 10 ms), so the wait
// ends after the work that was runnable, together with the readers that
// poll found. A timer's wait (time.Sleep) ends at the first scheduling
// point past d instead, ahead of the work queued. Where a timer
// descriptor cannot be used, the wait is a timer's; close releases the
// descriptor.
func newIdleWait() (wait func(d time.Duration), close func()) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return time.Sleep, func() {}
	}
	f := os.NewFile(uintptr(fd), "timerfd") // non-blocking: in the poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return time.Sleep, func() {}
	}
	var buf [8]byte
	return func(d time.Duration) {
		if d <= 0 {
			return
		}
		armed, failed := false, false
		err := rc.Read(func(fd uintptr) bool {
			if !armed {
				// Armed here, after the poller forgot any earlier
				// readiness, so that only this expiry can wake the wait.
				armed = true
				spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
				if unix.TimerfdSettime(int(fd), 0, &spec, nil) != nil {
					failed = true
					return true
				}
				return false // park until a poll finds it expired
			}
			_, err := unix.Read(int(fd), buf[:])
			return err != unix.EAGAIN
		})
		if err != nil || failed {
			time.Sleep(d)
		}
	}, func() { f.Close() }
}
