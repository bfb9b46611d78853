//go:build unix

package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// The first stop signal cancels the context; a repeated SIGHUP does not
// end the process, a second Ctrl-C does (twice).
func TestStopContext(t *testing.T) {
	// seen gets every signal too, so that the test ends only once each
	// one it sent has been delivered: the kernel delivers pending signals
	// lowest number first, so a SIGTERM (15) sent before a SIGINT (2) may
	// come after it, and one still pending when stop restores the default
	// would end the test binary.
	seen := make(chan os.Signal, 8)
	signal.Notify(seen, StopSignals()...)
	defer signal.Stop(seen)
	twice := make(chan struct{}, 4)
	ctx, stop := StopContext(context.Background(), func() { twice <- struct{}{} })
	defer stop()
	waitSeen := func(want ...os.Signal) {
		t.Helper()
		pending := map[os.Signal]bool{}
		for _, s := range want {
			pending[s] = true
		}
		for len(pending) > 0 {
			select {
			case s := <-seen:
				delete(pending, s)
			case <-time.After(10 * time.Second):
				t.Fatalf("signals %v never delivered", pending)
			}
		}
	}
	kill := func(s syscall.Signal) {
		if err := syscall.Kill(os.Getpid(), s); err != nil {
			t.Fatal(err)
		}
	}
	kill(syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	waitSeen(syscall.SIGHUP)
	kill(syscall.SIGHUP)
	kill(syscall.SIGTERM)
	kill(syscall.SIGINT)
	select {
	case <-twice:
	case <-time.After(10 * time.Second):
		t.Fatal("a second Ctrl-C did not end the run at once")
	}
	waitSeen(syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	if len(twice) != 0 {
		t.Error("a repeated SIGHUP or SIGTERM ended the run at once")
	}
}
