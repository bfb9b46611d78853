// Package streamcore is what every streaming engine client shares: the
// tuned transport with the kernel's receive stamps, the arrival times of
// the data read (one time per read, never going back), one request's
// lifecycle (Begin: the record, the limits, the send; Exchange: the
// request timeout and the stall timeout on one timer, and why a request
// failed) and the checks of a finished record's token counts
// (SettleCounts). The protocol packages (engines/openai: SSE chunks;
// engines/ollama: NDJSON lines) read the response body and fill the
// record; a timeout or stall fix made here lands in both.
package streamcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Exchange is one streaming request in flight, set up the same way by every
// client here (OpenAI SSE, Ollama NDJSON): a per-request timeout whose
// cause tells it apart from the caller's cancellation, and sent_at taken
// when the connection is obtained.
type Exchange struct {
	// Resp is the response, status 200; the caller reads and closes its
	// body.
	Resp *http.Response
	// Ctx is the request's own context; Cancel ends it with a cause.
	Ctx    context.Context
	Cancel context.CancelCauseFunc

	parent  context.Context
	timeout time.Duration
	stall   time.Duration
	redact  func(string) string
	stamper Stamper // the connection's kernel receive stamps; nil: none
	clock   func() float64
	sentAt  float64
	arr     Arrivals // the times Now handed out

	// The limits' watcher (see watch): one timer for the request timeout
	// and the stall timeout.
	base     time.Time     // monotonic origin of the times below
	deadline time.Duration // the request timeout, since base; 0: none
	last     atomic.Int64  // ns since base of the latest bytes read
	started  atomic.Bool   // bytes were read: the stall timeout counts
	mu       sync.Mutex
	timer    *time.Timer // nil until a limit needs it
	closed   bool
}

// Config says how to send.
type Config struct {
	HTTP    *http.Client
	Clock   func() float64
	Timeout time.Duration
	// Stall, when > 0, cuts the stream when no bytes arrive for that long
	// once the body's first bytes arrived (waiting for the first token in
	// a queue is bounded by Timeout only).
	Stall time.Duration
	// Header is sent as the request's header (not copied: it must not
	// change while the request is in flight).
	Header http.Header
	// Redact removes secrets from error text (nil: none).
	Redact func(string) string
	// ErrorBody renders the start of a non-200 body for the error.
	ErrorBody func([]byte) string
	// MaxErrorBody bounds how much of a non-200 body is read.
	MaxErrorBody int64
	// Wrote, when set, is called when the request has been written (or
	// its write failed), before the response; it must be quick.
	Wrote func()
}

// send posts body to target. A failure before a 200 response (building
// the request, the connection, the status) is written into rec (SentAt,
// DoneAt, Error) and send returns nil; otherwise rec.SentAt is set and the
// caller reads x.Resp.Body, then calls x.Close.
func send(ctx context.Context, cfg Config, target string, body []byte, rec *record.Request) *Exchange {
	redact := cfg.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	x := &Exchange{parent: ctx, timeout: cfg.Timeout, stall: cfg.Stall, redact: redact, clock: cfg.Clock}
	x.Ctx, x.Cancel = context.WithCancelCause(ctx)
	if cfg.Timeout > 0 || cfg.Stall > 0 {
		x.base = time.Now()
	}
	if cfg.Timeout > 0 {
		x.deadline = cfg.Timeout
		x.mu.Lock()
		x.timer = time.AfterFunc(cfg.Timeout, x.watch)
		x.mu.Unlock()
	}
	var sent atomic.Uint64 // float64 bits of the clock when the connection was obtained
	var conn atomic.Pointer[net.Conn]
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		sent.Store(math.Float64bits(cfg.Clock()))
		c := info.Conn
		conn.Store(&c)
	}}
	if cfg.Wrote != nil {
		trace.WroteRequest = func(httptrace.WroteRequestInfo) { cfg.Wrote() }
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(x.Ctx, trace), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		rec.SentAt = cfg.Clock()
		rec.DoneAt = rec.SentAt
		rec.Error = "build request: " + redact(unwrapURL(err).Error())
		x.Close()
		return nil
	}
	if cfg.Header != nil {
		req.Header = cfg.Header // the transport only reads it
	}
	rec.SentAt = cfg.Clock()
	resp, err := cfg.HTTP.Do(req)
	if t := sent.Load(); t != 0 {
		rec.SentAt = math.Float64frombits(t)
	}
	x.sentAt = rec.SentAt
	if c := conn.Load(); c != nil && *c != nil {
		x.stamper = StamperOf(*c)
	}
	if err != nil {
		rec.DoneAt = cfg.Clock()
		rec.Error = x.Describe(err, "send: ")
		x.Close()
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, cfg.MaxErrorBody))
		resp.Body.Close()
		rec.DoneAt = cfg.Clock()
		rec.Error = fmt.Sprintf("http %d: %s", resp.StatusCode, redact(cfg.ErrorBody(head)))
		x.Close()
		return nil
	}
	if cfg.Stall > 0 {
		resp.Body = &stallBody{ReadCloser: resp.Body, x: x}
	}
	x.Resp = resp
	return x
}

// errTimeout is the cause of a request's context when its own timeout
// expires, which tells it apart from the caller's cancellation.
var errTimeout = errors.New("request timeout")

// errStall is the cause of a request's context when no bytes arrived for
// the stall timeout.
var errStall = errors.New("stall timeout")

// stallBody notes when bytes arrive, for the stall timeout: a read that
// returns bytes stores a monotonic clock reading, no timer call (see
// watch).
type stallBody struct {
	io.ReadCloser
	x *Exchange
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		x := b.x
		x.last.Store(int64(time.Since(x.base)))
		if !x.started.Load() {
			x.startStall()
		}
	}
	return n, err
}

// startStall makes the watcher wake when the stall timeout could run out,
// at the first bytes.
func (x *Exchange) startStall() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.started.Swap(true) || x.closed {
		return
	}
	switch {
	case x.timer == nil:
		x.timer = time.AfterFunc(x.stall, x.watch)
	case x.deadline == 0 || x.deadline-time.Since(x.base) > x.stall:
		x.timer.Reset(x.stall)
	}
}

// watch is the limits' one timer: it wakes when the request timeout or
// the stall timeout could at the earliest have run out, and either cancels
// the exchange (the request is past its timeout, or no bytes came for the
// stall timeout since the latest) or sleeps again until the earlier of
// the two could run out, counting the stall from the latest bytes. So a
// stream is cut as soon as a limit is passed, as with a context deadline
// and a stall timer re-armed by every read, at one timer wake-up per stall
// period instead of a timer reset per read.
func (x *Exchange) watch() {
	x.mu.Lock()
	var cause error
	if !x.closed {
		now := time.Since(x.base)
		next := time.Duration(math.MaxInt64)
		if x.deadline > 0 {
			next = x.deadline
		}
		if x.started.Load() {
			next = min(next, time.Duration(x.last.Load())+x.stall)
		}
		switch {
		case x.deadline > 0 && now >= x.deadline:
			cause = errTimeout
		case now >= next:
			cause = errStall
		default:
			x.timer.Reset(next - now)
		}
	}
	x.mu.Unlock()
	if cause != nil {
		x.Cancel(cause)
	}
}

// Now returns when the data last read from the response reached this
// machine, on the run clock: the clock's reading less the age of the
// kernel's receive stamp, or the reading itself where the connection has
// no stamps (see arrival.go). It is the one conversion every client uses:
// what came in one read shares one time, and the times it returns never go
// back, nor before sent_at. Not safe for concurrent use (one reader per
// response).
func (x *Exchange) Now() float64 { return x.arr.Now(x.clock, x.stamper, x.sentAt) }

// Stamper is the connection's receive stamper (nil: none), for a reader
// that works out arrival times itself (Arrivals).
func (x *Exchange) Stamper() Stamper { return x.stamper }

// Close releases the request's context and body.
func (x *Exchange) Close() {
	if x.Resp != nil {
		x.Resp.Body.Close()
	}
	x.mu.Lock()
	x.closed = true
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
	x.Cancel(nil)
}

// Describe says why a send or a read failed: "cancelled" (with the
// caller's cause), "request timeout after <d>", "stall timeout: no data
// for <d>", a network timeout, or
// prefix + the error.
func (x *Exchange) Describe(err error, prefix string) string {
	if x.parent.Err() != nil {
		if cause := context.Cause(x.parent); cause != nil && !errors.Is(cause, context.Canceled) {
			return "cancelled: " + cause.Error()
		}
		return "cancelled"
	}
	switch cause := context.Cause(x.Ctx); {
	case errors.Is(cause, errTimeout):
		return fmt.Sprintf("request timeout after %s", x.timeout)
	case errors.Is(cause, errStall):
		return fmt.Sprintf("stall timeout: no data for %s", x.stall)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "request timeout: " + x.redact(unwrapURL(err).Error())
	}
	return prefix + x.redact(unwrapURL(err).Error())
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
