package workload

import (
	"sync/atomic"
	"time"
)

// Limits bound one request. A request cut by either is recorded as failed
// with the limit as its reason.
type Limits struct {
	// Timeout bounds a request from send to the end of its stream.
	Timeout time.Duration
	// Stall bounds the wait for the next bytes of a stream once its first
	// bytes arrived (the wait for the first token is only bounded by
	// Timeout: in an unlimited stage requests queue before their first
	// token).
	Stall time.Duration
}

// Flight is one request in flight as the load generator sees it. A client
// (a loadgen.Tracker) reads its Limits and reports the output tokens (or
// text chunks) it read.
type Flight struct {
	ID     string
	Start  time.Time
	Limits Limits
	// OnWritten, when set, is called once, by the first Wrote.
	OnWritten func()
	wrote     atomic.Bool
	tokens    atomic.Int64

	bounded      atomic.Int64
	firstBounded atomic.Bool
	firstWithin  atomic.Int64 // ns
}

// Wrote says the request has been written to the connection (or will
// not be: it failed before). A client calls it as soon as it knows, so
// that the load generator can release the next sends of a burst without
// waiting for the response; only the first call counts, and a nil Flight
// ignores it.
func (f *Flight) Wrote() {
	if f != nil && !f.wrote.Swap(true) && f.OnWritten != nil {
		f.OnWritten()
	}
}

// AddTokens adds n output tokens (or text chunks) read so far; a nil
// Flight ignores it.
func (f *Flight) AddTokens(n int) {
	if f != nil {
		f.tokens.Add(int64(n))
	}
}

// Tokens is the count reported so far.
func (f *Flight) Tokens() int { return int(f.tokens.Load()) }

// AddBounded counts a text chunk whose arrival time is bounded rather than
// exact: the client read it together with later data, so its time is the
// newest data's (an upper bound; see engines/openai/arrival.go). first
// says it was the response's first text chunk. A nil Flight ignores it.
func (f *Flight) AddBounded(first bool) {
	if f == nil {
		return
	}
	f.bounded.Add(1)
	if first {
		f.firstBounded.Store(true)
	}
}

// AddBoundedN counts n text chunks as AddBounded(false) does each, with
// one atomic update (a client that reads many chunks at once reports them
// together). A nil Flight ignores it.
func (f *Flight) AddBoundedN(n int) {
	if f != nil && n != 0 {
		f.bounded.Add(int64(n))
	}
}

// SetFirstWithin says how wide the interval is in which a bounded first
// chunk arrived: from the later of sent_at and the last time the client
// found the connection empty, to its recorded time.
func (f *Flight) SetFirstWithin(d time.Duration) {
	if f != nil {
		f.firstWithin.Store(int64(d))
	}
}

// FirstWithin is what SetFirstWithin said (0: not bounded, or not said).
func (f *Flight) FirstWithin() time.Duration { return time.Duration(f.firstWithin.Load()) }

// Bounded is the number of text chunks counted by AddBounded, and whether
// the first was one of them.
func (f *Flight) Bounded() (chunks int, first bool) {
	return int(f.bounded.Load()), f.firstBounded.Load()
}
