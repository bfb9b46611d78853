//go:build unix

package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// The first stop signal cancels the context; a repeated SIGHUP does not
// end the process, a second Ctrl-C does (twice).
func TestStopContext(t *testing.T) {
	twice := make(chan struct{}, 4)
	ctx, stop := StopContext(context.Background(), func() { twice <- struct{}{} })
	defer stop()
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
	kill(syscall.SIGHUP)
	kill(syscall.SIGTERM)
	kill(syscall.SIGINT)
	select {
	case <-twice:
	case <-time.After(10 * time.Second):
		t.Fatal("a second Ctrl-C did not end the run at once")
	}
	if len(twice) != 0 {
		t.Error("a repeated SIGHUP or SIGTERM ended the run at once")
	}
}
