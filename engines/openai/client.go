// Package openai is the streaming client for OpenAI-compatible inference
// servers (vLLM, SGLang, llama.cpp's llama-server, Ollama's /v1, ...).
//
// Client.Do sends one request with stream=true and
// stream_options.include_usage=true, reads the server-sent events as they
// arrive and returns one record.Request with the times and counts the
// methodology needs:
//
//   - sent_at: just before the request is written (when the connection is
//     obtained);
//   - every "arrival" below is when the bytes reached this machine: the
//     kernel's receive stamp mapped onto the run clock where the transport
//     has one (Linux), so that the client's own scheduling delays are not
//     in TTFT or the inter-token gaps; else the clock when they are read
//     (see engines/internal/streamcore/arrival.go);
//   - first_token_at: the arrival of the first chunk that carries text
//     (content, or reasoning_content / reasoning), never a role-only or
//     empty chunk;
//   - done_at: the arrival of [DONE], or the end of the stream after a
//     finish_reason;
//   - token_times: the arrival of every chunk that carries text (one token
//     each; these are never used as the token total). A chunk read
//     together with later data has that read's time, an upper bound (the
//     kernel may have merged it with what followed); such chunks are
//     counted into the request's workload.Flight (see streamcore.ReadStamp);
//   - output_tokens: usage.completion_tokens (tokens_source "usage"), else
//     llama.cpp's timings.predicted_n ("engine"), else max(1, chars/4)
//     ("estimate", the asiai M4 fallback); reasoning_tokens from
//     usage.completion_tokens_details;
//   - output_chars: characters of the content plus reasoning text.
//
// A failed request (ok=false: HTTP error, stream cut, timeout, stall,
// cancellation, an error sent in the stream, an implausible token count)
// keeps what arrived before the failure (first_token_at, token_times,
// output_chars), so that its energy can be studied, but carries 0 output
// tokens: the methodology excludes failed requests from the token
// denominator (see SettleCounts).
//
// Limits: WithRequestTimeout bounds a request from send to the end of its
// stream, WithStallTimeout the wait for the next bytes once the stream
// started; a workload.Flight's Limits (DoFlight) override both.
//
// This package is the OpenAI protocol (request bodies, SSE chunks, usage).
// The transport, the arrival times, the limits and the request lifecycle
// are the streaming core's (engines/internal/streamcore), which the
// Ollama client shares.
//
// The API key is sent as "Authorization: Bearer ..." and is never written
// to a record or an error.
package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/internal/chunkset"
	"github.com/joulebench/joulebench/engines/internal/redirect"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/internal/runclock"
	"github.com/joulebench/joulebench/workload"
)

// Tokens sources, as record.Request.TokensSource.
const (
	SourceUsage    = streamcore.SourceUsage
	SourceEngine   = streamcore.SourceEngine
	SourceEstimate = streamcore.SourceEstimate
)

// DefaultRequestTimeout bounds one request from send to the end of its
// stream unless WithRequestTimeout says otherwise. It is long because in an
// unlimited-concurrency stage the last requests wait behind all the others.
const DefaultRequestTimeout = streamcore.DefaultRequestTimeout

// MaxPlausibleTokens bounds the output tokens of one response (see
// SettleCounts).
const MaxPlausibleTokens = streamcore.MaxPlausibleTokens

const (
	maxErrorBody = 200      // bytes of a non-200 body kept in the error
	maxLine      = 16 << 20 // longest SSE line accepted
	maxJSONBody  = 64 << 20 // largest non-streamed response accepted
	readBufSize  = 16 << 10 // a stream's line reader
	drainTimeout = 2 * time.Second
)

// Request is workload.Request, the neutral request type.
//
// Deprecated: use workload.Request.
type Request = workload.Request

// Client sends requests to one server. It is safe for concurrent use; all
// requests share one tuned transport.
type Client struct {
	chatURL, completionsURL string
	http                    *http.Client
	apiKey                  string
	timeout, stall          time.Duration
	clock                   func() float64
	tokenTimes              bool
	receiveStamps           bool
	runID                   string         // X-Request-Id prefix
	extra                   map[string]any // members added to every body
	// Header values every request sends, made once (never modified).
	hdrContentType, hdrAccept, hdrAuth []string
	prep                               atomic.Pointer[prepared]
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (and so the transport).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithAPIKey sends key as a bearer token.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithRequestTimeout bounds each request from send to the end of its
// stream; 0 disables the bound.
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithStallTimeout cuts a stream when no bytes arrive for d once it
// started; 0 (the default) disables it.
func WithStallTimeout(d time.Duration) Option { return func(c *Client) { c.stall = d } }

// WithClock sets the clock the times are read from, in Unix seconds; it
// must be the run's clock so that request times and power samples share
// one time base. The default is NewClock().
func WithClock(clock func() float64) Option { return func(c *Client) { c.clock = clock } }

// WithRecordTokenTimes says whether token_times are recorded (default
// true).
func WithRecordTokenTimes(on bool) Option { return func(c *Client) { c.tokenTimes = on } }

// WithReceiveStamps says whether token times are the kernel's receive
// stamps mapped onto the clock (default true, where the transport has
// them; see engines/internal/streamcore/arrival.go) or the clock's reading when a token is read. Off,
// every time is a reading of the clock, which an injected clock that does
// not run at the wall clock's rate needs.
func WithReceiveStamps(on bool) Option { return func(c *Client) { c.receiveStamps = on } }

// WithRunID names the run in each request's X-Request-Id header,
// "<run id>-<request id>", which vLLM and SGLang take as the request id in
// their logs, so that server logs and archived records can be joined.
// Without it the header is the request id alone.
func WithRunID(id string) Option { return func(c *Client) { c.runID = id } }

// WithExtra adds members to every request's body (a request's own Extra
// wins), e.g. the thinking setting's chat_template_kwargs.
func WithExtra(extra map[string]any) Option { return func(c *Client) { c.extra = extra } }

// NewClient returns a client for the server at baseURL, with or without
// the /v1 suffix ("http://127.0.0.1:8000" and "http://127.0.0.1:8000/v1"
// are the same).
func NewClient(baseURL string, opts ...Option) *Client {
	c := &Client{
		chatURL:        Endpoint(baseURL, "/v1/chat/completions"),
		completionsURL: Endpoint(baseURL, "/v1/completions"),
		timeout:        DefaultRequestTimeout,
		tokenTimes:     true,
		receiveStamps:  true,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: NewTransport()}
	}
	// The key and the URL's credentials go to this server only.
	c.http = redirect.Guard(c.http)
	if c.clock == nil {
		c.clock = NewClock()
	}
	c.hdrContentType, c.hdrAccept = []string{"application/json"}, []string{"text/event-stream"}
	if c.apiKey != "" {
		c.hdrAuth = []string{"Bearer " + c.apiKey}
	}
	return c
}

// NewTransport returns the transport tuned for many long-lived streams to
// one host, with the kernel's receive stamps (streamcore.NewTransport).
func NewTransport() *http.Transport { return streamcore.NewTransport() }

// NewClock starts a run clock (internal/runclock) and returns its reading
// of Unix seconds, which never goes backwards: the wall time when it was
// made plus the monotonic time elapsed since.
func NewClock() func() float64 { return runclock.Func() }

// SettleCounts checks the token counts of a finished record and makes a
// failed record carry no output tokens (streamcore.SettleCounts).
func SettleCounts(rec *record.Request) { streamcore.SettleCounts(rec) }

// Endpoint is the URL of path on the server at base, without a trailing
// "/v1" of base (streamcore.Endpoint).
func Endpoint(base, path string) string { return streamcore.Endpoint(base, path) }

// errDrained cancels a request whose stream is complete but not closed.
var errDrained = errors.New("stream complete but not closed")

// sseBuffers are what reading one stream needs and a later stream can
// reuse: the line reader and the chunk memo's buffers.
type sseBuffers struct {
	br            *bufio.Reader
	prefix, shape []byte
}

// maxMemoBuf bounds a memo buffer kept for reuse.
const maxMemoBuf = 4 << 10

var readers = sync.Pool{New: func() any { return &sseBuffers{br: bufio.NewReaderSize(nil, readBufSize)} }}

// Do sends r and reads the whole response. It never returns an error: a
// failure is a record with ok=false and an error saying what happened
// ("cancelled", "cancelled: <cause>" when ctx was cancelled with a cause,
// "request timeout after <d>", "http <status>: <start of the body>",
// "stall timeout: no data for <d>", "stream cut: ...").
func (c *Client) Do(ctx context.Context, r workload.Request) record.Request {
	return c.DoFlight(ctx, r, nil)
}

// DoFlight (the loadgen.Tracker ability) is Do under the flight's
// limits (a zero limit keeps the client's), reporting each text chunk
// into f (nil: none) and telling it when the request has been written
// (Flight.Wrote), before the response.
func (c *Client) DoFlight(ctx context.Context, r workload.Request, f *workload.Flight) record.Request {
	prep := c.prep.Load()
	body, target, ok := prep.body(r)
	var err error
	if !ok {
		body, target, err = c.encode(r)
	}
	hdr := make(http.Header, 4)
	hdr["Content-Type"], hdr["Accept"] = c.hdrContentType, c.hdrAccept
	if c.hdrAuth != nil {
		hdr["Authorization"] = c.hdrAuth
	}
	if id := requestID(c.runID, r.ID); id != "" {
		hdr["X-Request-Id"] = []string{id}
	}
	if prep != nil {
		ctx = streamcore.WithConnPool(ctx, prep.conns)
	}
	var rec record.Request
	x := streamcore.Begin(ctx, streamcore.Call{
		Config: streamcore.Config{HTTP: c.http, Clock: c.clock, Timeout: c.timeout, Stall: c.stall, Header: hdr,
			Redact: c.redact, ErrorBody: cleanSnippet, MaxErrorBody: maxErrorBody},
		Target: target, Body: body, EncodeErr: err, ReportWrote: true, TokenTimes: c.tokenTimes}, r, f, &rec)
	if x == nil {
		return rec
	}
	defer x.Close()
	resp := x.Resp

	st := stream{c: c, x: x, stamper: x.Stamper(), rec: &rec, flight: f, model: r.Model, answer: r.Answer}
	if isJSON(resp.Header.Get("Content-Type")) {
		st.readJSON(resp.Body)
	} else {
		st.readSSE(resp.Body)
	}
	st.report()
	if st.complete() {
		// Let the transport see the end of the body so that the connection
		// is reused; a server that holds the stream open is cut off.
		guard := time.AfterFunc(drainTimeout, func() { x.Cancel(errDrained) })
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		guard.Stop()
	}
	st.finish(x)
	return rec
}

// isJSON reports whether a response's Content-Type is application/json
// (a server that did not stream).
func isJSON(contentType string) bool {
	if contentType == "text/event-stream" || strings.HasPrefix(contentType, "text/event-stream;") {
		return false // what a stream says, without parsing it
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json"
}

// stream is the state of one response being read.
type stream struct {
	c       *Client
	x       *streamcore.Exchange
	stamper streamcore.Stamper // the connection's receive stamps (nil: none)
	rec     *record.Request
	flight  *workload.Flight
	arr     streamcore.Arrivals // the times handed out
	info    chunkInfo
	memo    chunkMemo
	model   string // the model requested ("": not checked)
	// event is the data of an event that did not parse yet, while its
	// data lines come (see line).
	event []byte

	// The last text chunk, until the next event says whether its time is
	// exact: it is not when that event came in the same read (see
	// streamcore.ReadStamp).
	pending      bool
	pendingFirst bool
	pendingRead  streamcore.ReadStamp
	bounded      int // text chunks whose time is an upper bound

	// Text chunks (and bounded ones among them, the first excepted) not
	// yet added to the flight: they are added together whenever the data
	// read so far is used up (see report), one atomic update per read
	// instead of one or two per chunk.
	unreported, unreportedBounded int

	chars     int
	texts     chunkset.Counter // distinct chunk texts
	gotFirst  bool
	sawDone   bool
	sawFinish bool
	hasUsage  bool
	usage     usage
	timings   map[string]float64
	errMsg    string // an error the server sent, or a bad chunk
	readErr   error  // the read that ended the stream early
	eof       bool
	whole     bool // a non-streamed response: all tokens in one piece

	// sawReasoning: a chunk held reasoning text; the first answer text
	// after it sets first_answer_at. answer collects the answer text
	// when the request asks for it (workload.Request.Answer).
	sawReasoning bool
	answer       *strings.Builder
}

func (st *stream) readSSE(body io.Reader) {
	bufs := readers.Get().(*sseBuffers)
	br := bufs.br
	br.Reset(body)
	st.memo.prefix, st.memo.shape = bufs.prefix[:0], bufs.shape[:0]
	defer func() {
		br.Reset(nil)
		bufs.prefix, bufs.shape = nil, nil
		if cap(st.memo.prefix) <= maxMemoBuf && cap(st.memo.shape) <= maxMemoBuf {
			bufs.prefix, bufs.shape = st.memo.prefix[:0], st.memo.shape[:0]
		}
		st.memo.prefix, st.memo.shape = nil, nil
		readers.Put(bufs)
	}()
	var long []byte
	for {
		// No shape while an event's data is kept (st.event): the parse
		// that failed on it forgot the shape.
		if len(st.memo.shape) > 0 && br.Buffered() > 0 {
			// A token event of the stream's shape, already here: read in
			// place, newline and blank line included (see matchEvent).
			buf, _ := br.Peek(br.Buffered())
			if n := st.memo.matchEvent(buf, &st.info); n > 0 {
				_, _ = br.Discard(n)
				now := st.now()
				st.settle()
				if st.chunk(now) {
					return
				}
				if br.Buffered() == 0 {
					st.report() // before a read that may wait
				}
				continue
			}
		}
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull && len(long) <= maxLine {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > maxLine {
				st.errMsg = fmt.Sprintf("stream line longer than %d bytes", maxLine)
				return
			}
			line = long
		}
		// A line cut by a failure (the request timeout, a reset: err is
		// neither nil nor io.EOF) is no event: the failure is what the
		// record says, not the half chunk.
		if len(line) > 0 && (err == nil || err == io.EOF) && st.line(line) {
			return
		}
		if br.Buffered() == 0 {
			st.report() // before a read that may wait
		}
		if err != nil {
			st.rec.DoneAt = st.arr.Hold(st.c.clock(), st.rec.SentAt) // never before a token time
			if st.pending && !st.pendingRead.Full {
				st.pending = false // nothing came after it
			}
			st.settle()
			if err != io.EOF {
				st.readErr = err
			} else if st.eof = true; len(st.event) > 0 {
				st.endEvent("the stream ended inside an event: ")
			}
			return
		}
	}
}

// now is the arrival time of the data just read (see engines/internal/streamcore/arrival.go), never
// before sent_at or an earlier time of the stream. Events that came in
// the same read share its time, worked out once.
func (st *stream) now() float64 {
	// arrivals.now, its test for the same read inlined (the hot path).
	if s := st.stamper; s != nil && st.c.receiveStamps {
		r := s.LastRead()
		if st.arr.Same(r) {
			return st.arr.Last
		}
		return st.arr.Convert(r, st.c.clock(), st.rec.SentAt)
	}
	return st.arr.Hold(st.c.clock(), st.rec.SentAt)
}

// line handles one SSE line and reports whether the stream is over.
//
// An event is handled at its data line, as soon as the data is a whole
// chunk: servers send each chunk on one line, and the blank line that
// ends the event may come with the next write. An event's data may take
// several data lines (a pretty-printed chunk), which SSE joins with "\n":
// data that does not parse yet is kept and the next data line appended,
// until it parses or the blank line ends the event (then it is an invalid
// chunk).
func (st *stream) line(l []byte) bool {
	for len(l) > 0 && (l[len(l)-1] == '\n' || l[len(l)-1] == '\r') {
		l = l[:len(l)-1]
	}
	if len(l) == 0 {
		return st.endEvent("")
	}
	if len(l) < 5 || string(l[:5]) != "data:" {
		return false // comment, event:, id:, retry:
	}
	p := l[5:]
	if len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	if len(p) == 0 && len(st.event) == 0 {
		return false
	}
	now := st.now()
	st.settle()
	if len(st.event) > 0 {
		if len(st.event)+1+len(p) > maxLine {
			st.errMsg = fmt.Sprintf("stream event longer than %d bytes", maxLine)
			return true
		}
		st.event = append(append(st.event, '\n'), p...)
		p = st.event
	} else if string(p) == "[DONE]" {
		st.sawDone = true
		st.rec.DoneAt = now
		return true
	}
	if err := parseChunkMemo(p, &st.info, &st.memo); err != nil {
		if len(st.event) == 0 {
			st.event = append(st.event, p...) // the event may go on
		}
		return false
	}
	st.event = st.event[:0]
	if st.answer != nil && st.info.contentChars > 0 {
		appendAnswer(st.answer, p)
	}
	return st.chunk(now)
}

// endEvent ends the event being read (at its blank line, or the end of
// the stream): data kept because it did not parse is an invalid chunk;
// true when the stream is over.
func (st *stream) endEvent(prefix string) bool {
	if len(st.event) == 0 {
		return false
	}
	err := parseChunkMemo(st.event, &st.info, &st.memo)
	st.event = st.event[:0]
	if err == nil { // not reached: the data was tried at its last line
		return false
	}
	st.errMsg = prefix + err.Error()
	return true
}

// chunk records the chunk just parsed into st.info, which arrived at now;
// true when the stream is over (the server sent an error).
func (st *stream) chunk(now float64) bool {
	text := st.gotFirst
	over := st.apply(now)
	if st.info.contentChars+st.info.reasoningChars > 0 && st.arr.Read.Seq != 0 {
		st.pending, st.pendingFirst, st.pendingRead = true, !text, st.arr.Read
	}
	return over
}

// settle decides about the pending text chunk when the next event (or the
// end of the stream) is read: its time is only an upper bound when the
// next event came in the same read, or when its read filled the buffer.
func (st *stream) settle() {
	if !st.pending {
		return
	}
	st.pending = false
	if r := st.pendingRead; r.Full || st.arr.Read.Seq == r.Seq {
		st.bounded++
		if !st.pendingFirst {
			st.unreportedBounded++
		} else {
			st.flight.AddBounded(true)
			// It arrived after sent_at, and after the last read that
			// found the connection empty.
			lo := st.rec.SentAt
			if r.After != 0 {
				now := st.c.clock()
				if a := streamcore.ArrivalAt(r.After, now); a != now {
					lo = max(lo, a)
				}
			}
			st.flight.SetFirstWithin(time.Duration(max(0, st.rec.FirstTokenAt-lo) * 1e9))
		}
	}
}

// report adds the text chunks counted since the last report to the
// flight.
func (st *stream) report() {
	if st.unreported != 0 {
		st.flight.AddTokens(st.unreported)
		st.unreported = 0
	}
	if st.unreportedBounded != 0 {
		st.flight.AddBoundedN(st.unreportedBounded)
		st.unreportedBounded = 0
	}
}

// apply folds the parsed chunk into the record; true when the stream is
// over (the server sent an error).
func (st *stream) apply(now float64) bool {
	info := &st.info
	if info.model != nil && st.wrongModel() {
		return true
	}
	if n := info.contentChars + info.reasoningChars; n > 0 {
		if !st.gotFirst {
			st.gotFirst = true
			st.rec.FirstTokenAt = now
		}
		if st.c.tokenTimes {
			st.rec.TokenTimes = append(st.rec.TokenTimes, now)
		}
		st.chars += n
		st.unreported++
		if info.reasoningChars > 0 {
			st.sawReasoning = true
		}
		if info.contentChars > 0 && st.sawReasoning && st.rec.FirstAnswerAt == 0 {
			st.rec.FirstAnswerAt = now
		}
		st.texts.Add(info.textHash)
	}
	if info.finished {
		st.sawFinish = true
	}
	if info.hasUsage {
		st.hasUsage = true
		st.usage = info.usage
	}
	if info.timings != nil {
		st.timings = info.timings
	}
	if info.errMsg != "" {
		st.errMsg = info.errMsg
		return true
	}
	return false
}

// readJSON handles a server that answered with one JSON object instead of
// a stream: every token arrives at once.
func (st *stream) readJSON(body io.Reader) {
	data, err := io.ReadAll(io.LimitReader(body, maxJSONBody))
	now := st.now()
	if err != nil {
		st.readErr = err
		return
	}
	if err := parseChunk(bytes.TrimSpace(data), &st.info); err != nil {
		st.errMsg = "non-streamed response: " + err.Error()
		return
	}
	if st.answer != nil && st.info.contentChars > 0 {
		appendAnswer(st.answer, bytes.TrimSpace(data))
	}
	st.apply(now)
	st.rec.DoneAt = now
	st.sawDone = true
	st.whole = true
}

// complete reports a stream that ended as a successful one does.
func (st *stream) complete() bool {
	return st.errMsg == "" && st.readErr == nil && (st.sawDone || (st.eof && st.sawFinish))
}

// finish sets ok, error and the token counts.
func (st *stream) finish(x *streamcore.Exchange) {
	rec := st.rec
	if rec.DoneAt == 0 {
		rec.DoneAt = st.arr.Hold(st.c.clock(), rec.SentAt)
	}
	switch {
	case st.complete() && rec.FirstTokenAt == 0:
		// A stream that completes without a single output token has no
		// generation interval; it is recorded as failed, never as tokens.
		rec.Error = "empty response: the stream completed without an output token"
	case st.complete():
		rec.OK = true
	case st.errMsg != "":
		rec.Error = st.c.redact(truncate(st.errMsg, maxErrorBody))
	case st.readErr != nil:
		rec.Error = x.Describe(st.readErr, "stream cut: ")
	default:
		rec.Error = "stream ended before [DONE] or a finish_reason"
	}
	rec.OutputChars = st.chars
	rec.DistinctChunks = st.texts.Distinct()
	switch {
	case st.hasUsage:
		rec.OutputTokens = st.usage.completionTokens
		rec.PromptTokens = st.usage.promptTokens
		rec.ReasoningTokens = st.usage.reasoningTokens
		rec.TokensSource = SourceUsage
	case st.timings["predicted_n"] > 0:
		rec.OutputTokens = streamcore.ClampInt(st.timings["predicted_n"])
		rec.PromptTokens = streamcore.ClampInt(st.timings["prompt_n"])
		rec.TokensSource = SourceEngine
	case st.chars > 0 || rec.OK:
		rec.OutputTokens = streamcore.Estimate(st.chars)
		rec.TokensSource = SourceEstimate
	}
	if st.whole && len(rec.TokenTimes) == 1 {
		rec.TokenCounts = []int{rec.OutputTokens}
	}
	if len(rec.TokenTimes) == 0 {
		rec.TokenTimes = nil
	}
	rec.EngineTimings = st.timings
	rec.CachedPromptTokens = st.usage.cachedTokens
	if n, ok := st.timings["cache_n"]; ok && rec.CachedPromptTokens == 0 {
		rec.CachedPromptTokens = streamcore.ClampInt(n) // llama.cpp
	}
	if why := st.usage.notWhole(); rec.OK && st.hasUsage && why != "" {
		rec.OK = false
		rec.Error = "implausible token count from the server: usage " + why + " is not a whole number"
	}
	streamcore.SettleCounts(rec)
}

// wrongModel fails the stream when the chunk just parsed names another
// model than the one requested.
func (st *stream) wrongModel() bool {
	if st.model == "" || sameModel(st.info.model, st.model) {
		return false
	}
	st.errMsg = fmt.Sprintf("the server answered with model %q, not the model requested, %q", truncate(unquote(st.info.model), 200), truncate(st.model, 200))
	return true
}

// sameModel reports whether a chunk's model (raw JSON string) is the
// model requested: the same name, or the same with Ollama's default tag
// (":latest") on one side only.
func sameModel(raw []byte, want string) bool {
	if string(raw) == want {
		return true
	}
	got := unquote(raw) // escapes, or a tag
	const tag = ":latest"
	return got == want || got == want+tag || got+tag == want
}

// encode builds the JSON body (see appendBody) and picks the endpoint.
func (c *Client) encode(r workload.Request) ([]byte, string, error) {
	if c.extra != nil {
		r.Extra = withExtra(c.extra, r.Extra)
	}
	target := c.completionsURL
	if r.Chat {
		target = c.chatURL
	}
	size := 160 + len(r.Model) + len(r.Prompt) + 24*len(r.Extra)
	for _, m := range r.Messages {
		size += 32 + len(m.Role) + len(m.Content)
	}
	b, err := appendBody(make([]byte, 0, size), r)
	return b, target, err
}

// withExtra is extra with own's members added (own wins), a new map.
func withExtra(extra, own map[string]any) map[string]any {
	m := make(map[string]any, len(extra)+len(own))
	for k, v := range extra {
		m[k] = v
	}
	for k, v := range own {
		m[k] = v
	}
	return m
}

// requestID is the X-Request-Id of request id in run runID: "<run>-<id>",
// either part alone when the other is empty.
func requestID(runID, id string) string {
	switch {
	case runID == "":
		return id
	case id == "":
		return runID
	}
	return runID + "-" + id
}

// redact removes the API key from text that came from elsewhere.
func (c *Client) redact(s string) string {
	if c.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[redacted]")
}

// cleanSnippet makes the start of a body fit on one line.
func cleanSnippet(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "(empty body)"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
