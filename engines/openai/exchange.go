package openai

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
	"sync/atomic"
	"time"

	"github.com/joulebench/joulebench/archive"
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
	redact  func(string) string
	stop    context.CancelFunc
	stamper receiveStamper // the connection's kernel receive stamps; nil: none
}

// ExchangeConfig says how to send.
type ExchangeConfig struct {
	HTTP    *http.Client
	Clock   func() float64
	Timeout time.Duration
	Header  http.Header
	// Redact removes secrets from error text (nil: none).
	Redact func(string) string
	// ErrorBody renders the start of a non-200 body for the error.
	ErrorBody func([]byte) string
	// MaxErrorBody bounds how much of a non-200 body is read.
	MaxErrorBody int64
}

// Send posts body to target. A failure before a 200 response (building
// the request, the connection, the status) is written into rec (SentAt,
// DoneAt, Error) and Send returns nil; otherwise rec.SentAt is set and the
// caller reads x.Resp.Body, then calls x.Close.
func Send(ctx context.Context, cfg ExchangeConfig, target string, body []byte, rec *archive.Request) *Exchange {
	redact := cfg.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	x := &Exchange{parent: ctx, timeout: cfg.Timeout, redact: redact}
	x.Ctx, x.Cancel = context.WithCancelCause(ctx)
	x.stop = func() {}
	if cfg.Timeout > 0 {
		x.Ctx, x.stop = context.WithTimeoutCause(x.Ctx, cfg.Timeout, errTimeout)
	}
	var sent atomic.Uint64 // float64 bits of the clock when the connection was obtained
	var conn atomic.Pointer[net.Conn]
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		sent.Store(math.Float64bits(cfg.Clock()))
		c := info.Conn
		conn.Store(&c)
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(x.Ctx, trace), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		rec.SentAt = cfg.Clock()
		rec.DoneAt = rec.SentAt
		rec.Error = "build request: " + redact(unwrapURL(err).Error())
		x.Close()
		return nil
	}
	for k, v := range cfg.Header {
		req.Header[k] = v
	}
	rec.SentAt = cfg.Clock()
	resp, err := cfg.HTTP.Do(req)
	if t := sent.Load(); t != 0 {
		rec.SentAt = math.Float64frombits(t)
	}
	if c := conn.Load(); c != nil && *c != nil {
		x.stamper = stamperOf(*c)
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
	x.Resp = resp
	return x
}

// Arrival returns when the data last read from the response reached this
// machine, on the time base of now (the clock's reading): now less the age
// of the kernel's receive stamp, or now itself where the connection has no
// stamps (see arrival.go).
func (x *Exchange) Arrival(now float64) float64 { return arrival(x.stamper, now) }

// Close releases the request's context and body.
func (x *Exchange) Close() {
	if x.Resp != nil {
		x.Resp.Body.Close()
	}
	x.stop()
	x.Cancel(nil)
}

// Describe says why a send or a read failed: "cancelled" (with the
// caller's cause), "request timeout after <d>", a network timeout, or
// prefix + the error.
func (x *Exchange) Describe(err error, prefix string) string {
	if x.parent.Err() != nil {
		if cause := context.Cause(x.parent); cause != nil && !errors.Is(cause, context.Canceled) {
			return "cancelled: " + cause.Error()
		}
		return "cancelled"
	}
	if errors.Is(context.Cause(x.Ctx), errTimeout) {
		return fmt.Sprintf("request timeout after %s", x.timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "request timeout: " + x.redact(unwrapURL(err).Error())
	}
	return prefix + x.redact(unwrapURL(err).Error())
}
