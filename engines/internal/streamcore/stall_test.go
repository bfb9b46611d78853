package streamcore

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// feedReader returns one byte per value sent on its channel, and EOF
// when the channel is closed.
type feedReader chan struct{}

func (f feedReader) Read(p []byte) (int, error) {
	if _, ok := <-f; !ok {
		return 0, io.EOF
	}
	p[0] = 'x'
	return 1, nil
}

func (f feedReader) Close() error { return nil }

// TestStallCountsFromLatestBytes: bytes at 0, 100 and 200 ms, then none,
// with a 300 ms stall limit. The stream is cut 300 ms after the latest
// bytes, at 500 ms: never while bytes keep coming less than 300 ms apart,
// and not one whole period late either (a watcher that only looked
// whether any bytes came in each 300 ms period since the first would cut
// at 600 ms, 400 ms after them; one that measured from the first bytes
// would cut at 300 ms).
func TestStallCountsFromLatestBytes(t *testing.T) {
	const stall = 300 * time.Millisecond
	x := &Exchange{stall: stall, base: time.Now()}
	x.Ctx, x.Cancel = context.WithCancelCause(context.Background())
	defer x.Close()
	feed := make(feedReader)
	b := &stallBody{ReadCloser: feed, x: x}
	read := make(chan time.Time, 3)
	go func() {
		var p [1]byte
		for {
			if _, err := b.Read(p[:]); err != nil {
				return
			}
			read <- time.Now()
		}
	}()
	var last time.Time
	for i := range 3 {
		if i > 0 {
			time.Sleep(100 * time.Millisecond) // the server's pace
		}
		feed <- struct{}{}
		last = <-read
		if x.Ctx.Err() != nil {
			t.Fatalf("cut after %d reads less than %v apart", i+1, stall)
		}
	}
	<-x.Ctx.Done()
	idle := time.Since(last)
	if !errors.Is(context.Cause(x.Ctx), errStall) {
		t.Fatalf("cause %v, want the stall", context.Cause(x.Ctx))
	}
	// Lower bound: the cut came no earlier than the stall after the latest
	// bytes (less the time the reader took to report them). Upper bound:
	// well before one more whole period.
	if idle < stall-5*time.Millisecond || idle > stall+70*time.Millisecond {
		t.Fatalf("cut %v after the latest bytes, want just past %v", idle, stall)
	}
	close(feed)
}

// TestWatcherStopsAtClose: an exchange closed before its limits run out
// is never cut by them (its context ends as closed, with no cause).
func TestWatcherStopsAtClose(t *testing.T) {
	const stall = 30 * time.Millisecond
	x := &Exchange{stall: stall, deadline: 2 * stall, base: time.Now()}
	parent, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	x.Ctx, x.Cancel = context.WithCancelCause(parent)
	x.timer = time.AfterFunc(x.deadline, x.watch)
	feed := make(feedReader, 1)
	feed <- struct{}{}
	b := &stallBody{ReadCloser: feed, x: x}
	var p [1]byte
	if _, err := b.Read(p[:]); err != nil {
		t.Fatal(err)
	}
	// Close, but keep the context alive to see whether a limit fires.
	x.mu.Lock()
	x.closed = true
	x.timer.Stop()
	x.mu.Unlock()
	time.Sleep(3 * stall) // longer than both limits: a watcher left running would fire
	if err := context.Cause(x.Ctx); err != nil {
		t.Fatalf("cut after Close: %v", err)
	}
	x.Close()
	if err := context.Cause(x.Ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cause %v after Close, want context.Canceled", err)
	}
}

// TestTimeoutAndStallShareOneTimer: with a request timeout of 250 ms and
// a stall timeout of 150 ms, bytes every 50 ms are cut by the timeout (at
// 250 ms, not later); bytes that stop at 30 ms are cut by the stall (at
// 180 ms); the stall only counts once bytes came (a request that waits
// 200 ms for its first bytes is cut by the timeout at 250 ms).
func TestTimeoutAndStallShareOneTimer(t *testing.T) {
	const timeout, stall = 250 * time.Millisecond, 150 * time.Millisecond
	tests := []struct {
		name  string
		bytes []time.Duration // when bytes come, since the start
		cause error
		at    time.Duration
	}{
		{"bytes keep coming", []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond}, errTimeout, timeout},
		{"bytes stop", []time.Duration{0, 30 * time.Millisecond}, errStall, 180 * time.Millisecond},
		{"first bytes late", []time.Duration{200 * time.Millisecond}, errTimeout, timeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := &Exchange{stall: stall, deadline: timeout, base: time.Now()}
			x.Ctx, x.Cancel = context.WithCancelCause(context.Background())
			defer x.Close()
			x.mu.Lock()
			x.timer = time.AfterFunc(timeout, x.watch)
			x.mu.Unlock()
			feed := make(feedReader)
			b := &stallBody{ReadCloser: feed, x: x}
			go func() {
				var p [1]byte
				for b.Read(p[:]); x.Ctx.Err() == nil; b.Read(p[:]) {
				}
			}()
			for _, at := range tc.bytes {
				time.Sleep(time.Until(x.base.Add(at))) // the server's pace
				select {
				case feed <- struct{}{}:
				case <-x.Ctx.Done():
				}
			}
			<-x.Ctx.Done()
			at := time.Since(x.base)
			if cause := context.Cause(x.Ctx); !errors.Is(cause, tc.cause) {
				t.Fatalf("cause %v, want %v", cause, tc.cause)
			}
			if at < tc.at-5*time.Millisecond || at > tc.at+80*time.Millisecond {
				t.Fatalf("cut at %v, want just past %v", at, tc.at)
			}
			close(feed)
		})
	}
}
