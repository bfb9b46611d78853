package openai

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

// TestStallCountsFromLatestBytes: bytes at 0, 120 and 240 ms, then none,
// with a 200 ms stall limit. The stream is cut 200 ms after the latest
// bytes, at 440 ms: never while bytes keep coming less than 200 ms apart,
// and not one whole period late either (a watcher that only looked
// whether any bytes came in each 200 ms period since the first would cut
// at 600 ms; one that measured from the first bytes would cut at 200 ms).
func TestStallCountsFromLatestBytes(t *testing.T) {
	const stall = 200 * time.Millisecond
	x := &Exchange{stall: stall}
	x.Ctx, x.Cancel = context.WithCancelCause(context.Background())
	defer x.Cancel(nil)
	feed := make(feedReader)
	b := &stallBody{ReadCloser: feed, x: x, base: time.Now()}
	defer b.Close()
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
			time.Sleep(120 * time.Millisecond) // the server's pace
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
	if idle < stall-5*time.Millisecond || idle > stall+120*time.Millisecond {
		t.Fatalf("cut %v after the latest bytes, want just past %v", idle, stall)
	}
	close(feed)
}

// TestStallWatcherStopsAtClose: a body closed before the stall runs out
// never cancels the exchange.
func TestStallWatcherStopsAtClose(t *testing.T) {
	const stall = 30 * time.Millisecond
	x := &Exchange{stall: stall}
	x.Ctx, x.Cancel = context.WithCancelCause(context.Background())
	defer x.Cancel(nil)
	feed := make(feedReader, 1)
	feed <- struct{}{}
	b := &stallBody{ReadCloser: feed, x: x, base: time.Now()}
	var p [1]byte
	if _, err := b.Read(p[:]); err != nil {
		t.Fatal(err)
	}
	b.Close()
	time.Sleep(3 * stall) // longer than the stall: a watcher left running would fire
	if err := context.Cause(x.Ctx); err != nil {
		t.Fatalf("cancelled after Close: %v", err)
	}
}
