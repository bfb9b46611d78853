// Package ssebench is a small OpenAI-compatible streaming server for
// benchmarking joulebench's run path, and the pieces of the benchmark that
// are not the client under test: a write-time log joined to archived
// requests by their X-Request-Id, a minimal reference client that only
// counts `data:` lines, CPU pinning of child processes, and the hidden
// child mode that runs either in a process of its own.
//
// The server speaks just enough HTTP/1.1 for joulebench's clients: GET
// /v1/models (readiness and identity), POST /v1/chat/completions and
// /v1/completions (a stream of max_tokens chunks the size of vLLM's, then
// a finish event, a usage event and [DONE]) and GET /ssebench/log (the
// write-time log as JSON). Anything else is 404.
package ssebench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/joulebench/joulebench/internal/runclock"
)

// Config says how the server streams.
type Config struct {
	// First is the delay from a request's arrival to its first token.
	First time.Duration
	// Gap paces the stream: one step every Gap writes one chunk to every
	// stream that is due, as an engine's decode loop does. Zero writes as
	// fast as the connection takes them.
	Gap time.Duration
	// Batch is how many chunks one write carries when unpaced (default 1;
	// paced streams write one chunk per step).
	Batch int
	// Clock stamps arrivals and writes in Unix seconds (default NewClock()).
	Clock func() float64
	// Model is the model id /v1/models lists (default "ssebench").
	Model string
}

// DefaultTokens is the stream length of a request without max_tokens.
const DefaultTokens = 16

// TailEvents is how many `data:` events follow the content chunks of a
// stream besides [DONE]: the finish event and the usage event.
const TailEvents = 2

// NewClock returns the reading of a new run clock (internal/runclock),
// the clock joulebench's runs use: the wall time when it was made plus
// the monotonic time elapsed since. Two such clocks made at different
// times differ by how much the wall clock was adjusted between their
// starts (see Offset).
func NewClock() func() float64 { return runclock.Func() }

// Offset is how far the wall clock moved against the monotonic clock from
// a to b (runclock.Offset): a clock made by NewClock at a reads Offset(a,
// b) seconds less than one made at b, at every instant.
func Offset(a, b time.Time) float64 { return runclock.Offset(a, b) }

// Server is a running stream server.
type Server struct {
	ln       net.Listener
	cfg      Config
	log      *Log
	arrivals chan *stream
	models   []byte
	done     chan struct{}
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// stream is one paced response, owned by the step loop once it arrives.
type stream struct {
	conn   io.Writer
	tokens int
	due    time.Time
	writes []float64
	ends   []float64
	done   chan error
}

// Start listens on addr (host:port; port 0 picks one) and serves until
// ctx ends or Close is called.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	if cfg.Batch == 0 {
		cfg.Batch = 1
	}
	switch {
	case cfg.Batch < 0:
		return nil, fmt.Errorf("ssebench: batch %d: want 1 or more", cfg.Batch)
	case cfg.Gap > 0 && cfg.Batch > 1:
		return nil, fmt.Errorf("ssebench: batch %d with gap %v: a paced stream writes one chunk per step", cfg.Batch, cfg.Gap)
	case cfg.Gap < 0 || cfg.First < 0:
		return nil, fmt.Errorf("ssebench: negative first (%v) or gap (%v)", cfg.First, cfg.Gap)
	}
	if cfg.Clock == nil {
		cfg.Clock = NewClock()
	}
	if cfg.Model == "" {
		cfg.Model = "ssebench"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssebench: listen: %w", err)
	}
	s := &Server{ln: ln, cfg: cfg, log: &Log{}, done: make(chan struct{}), conns: map[net.Conn]struct{}{},
		models: fmt.Appendf(nil, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"ssebench","max_model_len":32768}]}`, cfg.Model)}
	if cfg.Gap > 0 {
		s.arrivals = make(chan *stream, 4096)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.stepLoop() }()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.accept() }()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's root URL.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Log is the server's write-time log.
func (s *Server) Log() *Log { return s.log }

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// request is what the server reads of an HTTP request.
type request struct {
	method, path, query string
	id                  string // X-Request-Id
	body                []byte
}

func (s *Server) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 16<<10)
	var req request
	for {
		if err := readRequest(br, &req); err != nil {
			if !errors.Is(err, io.EOF) {
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}
			return
		}
		var err error
		switch {
		case req.method == "GET" && req.path == "/v1/models":
			err = writeBody(c, "200 OK", "application/json", s.models)
		case req.method == "GET" && req.path == "/ssebench/log":
			var b bytes.Buffer
			if err = s.log.WriteJSON(&b, queryValue(req.query, "prefix")); err == nil {
				err = writeBody(c, "200 OK", "application/json", b.Bytes())
			}
		case req.method == "POST" && (req.path == "/v1/chat/completions" || req.path == "/v1/completions"):
			err = s.stream(c, &req)
		default:
			err = writeBody(c, "404 Not Found", "text/plain", []byte("not found\n"))
		}
		if err != nil {
			return
		}
	}
}

func writeBody(w io.Writer, status, ctype string, body []byte) error {
	_, err := fmt.Fprintf(w, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", status, ctype, len(body), body)
	return err
}

const streamHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"

// tokenFrame is one HTTP chunk holding one SSE event the size of vLLM's.
var tokenFrame = frame(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"ssebench","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}` + "\n\n")

func frame(payload string) []byte {
	return fmt.Appendf(nil, "%x\r\n%s\r\n", len(payload), payload)
}

// appendTail appends the events after the content (TailEvents of them,
// then [DONE]) and the end of the chunked body.
func appendTail(b []byte, tokens int) []byte {
	for _, p := range []string{
		`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n",
		`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":` + strconv.Itoa(tokens) + `,"total_tokens":` + strconv.Itoa(tokens+8) + "}}\n\n",
		"data: [DONE]\n\n",
	} {
		b = append(b, frame(p)...)
	}
	return append(b, "0\r\n\r\n"...)
}

// stream answers one completion request: the header, the content chunks
// (paced by the step loop or written in batches here) and the tail; it
// logs the request with the time of each chunk's write.
func (s *Server) stream(c net.Conn, req *request) error {
	arrived := s.cfg.Clock()
	due := time.Now().Add(s.cfg.First)
	tokens := jsonInt(req.body, `"max_tokens":`)
	if tokens <= 0 {
		tokens = DefaultTokens
	}
	if _, err := io.WriteString(c, streamHeader); err != nil {
		return err
	}
	var writes, ends []float64
	if s.arrivals != nil {
		st := &stream{conn: c, tokens: tokens, due: due, writes: make([]float64, 0, tokens), ends: make([]float64, 0, tokens), done: make(chan error, 1)}
		select {
		case s.arrivals <- st:
		case <-s.done:
			return net.ErrClosed
		}
		select {
		case err := <-st.done:
			if err != nil {
				return err
			}
		case <-s.done:
			return net.ErrClosed
		}
		writes, ends = st.writes, st.ends
	} else {
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		var err error
		if writes, ends, err = writeBatches(c, tokens, s.cfg.Batch, s.cfg.Clock); err != nil {
			return err
		}
	}
	// Logged before the tail, which lets the client finish.
	s.log.Add(Entry{ID: req.id, ArrivedAt: arrived, Writes: writes, WriteEnds: ends})
	_, err := c.Write(appendTail(nil, tokens))
	return err
}

// writeBatches writes tokens chunks, batch of them per write (the last
// write carries the rest), and returns each chunk's write time (the clock
// just before the write that carried it) and write end (just after).
func writeBatches(c io.Writer, tokens, batch int, clock func() float64) (writes, ends []float64, err error) {
	buf := bytes.Repeat(tokenFrame, min(batch, tokens))
	writes, ends = make([]float64, 0, tokens), make([]float64, 0, tokens)
	for len(writes) < tokens {
		n := min(batch, tokens-len(writes))
		t := clock()
		if _, err := c.Write(buf[:n*len(tokenFrame)]); err != nil {
			return writes, ends, err
		}
		e := clock()
		for range n {
			writes, ends = append(writes, t), append(ends, e)
		}
	}
	return writes, ends, nil
}

// stepLoop writes one chunk to every due stream each Gap.
func (s *Server) stepLoop() {
	var active []*stream
	tick := time.NewTicker(s.cfg.Gap)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-tick.C:
			active = s.step(active, now)
		}
	}
}

// step takes the streams that arrived, then writes one chunk to each
// stream due at now; it returns the streams still to finish.
func (s *Server) step(active []*stream, now time.Time) []*stream {
	for more := true; more; {
		select {
		case st := <-s.arrivals:
			active = append(active, st)
		default:
			more = false
		}
	}
	kept := active[:0]
	for _, st := range active {
		if now.Before(st.due) {
			kept = append(kept, st)
			continue
		}
		t := s.cfg.Clock()
		if _, err := st.conn.Write(tokenFrame); err != nil {
			st.done <- err
			continue
		}
		st.writes, st.ends = append(st.writes, t), append(st.ends, s.cfg.Clock())
		if len(st.writes) == st.tokens {
			st.done <- nil
			continue
		}
		kept = append(kept, st)
	}
	clear(active[len(kept):])
	return kept
}

// readRequest reads one HTTP/1.1 request (a body only with Content-Length)
// into req, reusing its body's storage.
func readRequest(br *bufio.Reader, req *request) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("request line: %w", err)
	}
	parts := bytes.Fields(line)
	if len(parts) != 3 {
		return fmt.Errorf("request line %q: want METHOD TARGET VERSION", bytes.TrimSpace(line))
	}
	req.method = string(parts[0])
	target := parts[1]
	req.query = ""
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		req.query = string(target[i+1:])
		target = target[:i]
	}
	req.path = string(target)
	req.id = ""
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fmt.Errorf("header %q: no colon", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err = strconv.Atoi(string(value)); err != nil || n < 0 {
				return fmt.Errorf("content-length %q: want a count of bytes", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return fmt.Errorf("transfer-encoding %q: only content-length bodies are read", value)
		case bytes.EqualFold(name, []byte("X-Request-Id")):
			req.id = string(value)
		}
	}
	req.body = slices.Grow(req.body[:0], n)[:n]
	if _, err := io.ReadFull(br, req.body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

// jsonInt is the non-negative integer after key in b (0 when absent).
func jsonInt(b []byte, key string) int {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(b[i+len(key):], " \t\r\n")
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// queryValue is the value of key in a URL query string ("" when absent
// or malformed).
func queryValue(query, key string) string {
	v, err := url.ParseQuery(query)
	if err != nil {
		return ""
	}
	return v.Get(key)
}
