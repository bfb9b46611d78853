package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Server is an engine process that serves HTTP on 127.0.0.1: the launch
// and stop of Process plus readiness and JSON queries. Create it with
// NewServer; it runs once.
type Server struct {
	// Spec is the frozen command line.
	Spec Spec
	// Base is http://127.0.0.1:PORT.
	Base string
	// HealthPath answers 200 once the engine serves requests ("/health").
	HealthPath string
	// Ready, when set, runs after the health probe first answered 200 and
	// must succeed too (a second probe, loading a model, ...).
	Ready func(ctx context.Context) error
	// Poll is the interval between health probes (default 250 ms).
	Poll time.Duration
	// HTTP is used for probes and queries (default: 10 s timeout).
	HTTP *http.Client

	mu      sync.Mutex
	proc    *Process
	exited  chan struct{}
	ready   bool
	lastErr string

	// track says how the engine is watched beyond its process group;
	// tag marks its processes (TagEnv), before are the processes of its
	// names that ran before it, pidFile its pid file (see lifecycle.go).
	track   Tracking
	tag     string
	before  map[int]bool
	pidFile string
}

// NewServer returns a server for spec listening at base.
func NewServer(spec Spec, base, healthPath string) *Server {
	return &Server{Spec: spec, Base: base, HealthPath: healthPath, exited: make(chan struct{})}
}

// FreePort asks the system for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// LoopbackURL is http://127.0.0.1:port.
func LoopbackURL(port int) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// Client is the HTTP client of probes and queries.
func (s *Server) Client() *http.Client { return s.client() }

func (s *Server) client() *http.Client {
	if s.HTTP == nil {
		s.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	return s.HTTP
}

// HealthURL is Base + HealthPath.
func (s *Server) HealthURL() string { return s.Base + s.HealthPath }

// Start launches the process; it returns once started, not ready.
func (s *Server) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("%s: already started", s.Spec.Name)
	}
	p, err := Start(s.prepareTracking(s.Spec))
	if err != nil {
		return err
	}
	s.proc = p
	if err := s.writePidFile(p); err != nil {
		p.Note("%v (a later run cannot report this engine if it is left running)", err)
	}
	go func() {
		<-p.Exited()
		close(s.exited)
	}()
	return nil
}

// ExitStatus is how the engine process exited; empty while it runs or
// before Start.
func (s *Server) ExitStatus() string {
	if p := s.Process(); p != nil {
		return p.ExitStatus()
	}
	return ""
}

// Process is the running process (nil before Start).
func (s *Server) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Exited is closed when the process has exited (never before Start).
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitError describes an exit that was not asked for (status and the tail
// of engine.log); nil while it runs or after Stop.
func (s *Server) ExitError() error {
	if p := s.Process(); p != nil {
		return p.ExitError()
	}
	return nil
}

// WaitReady probes the health URL until it answers 200 and Ready (if
// set) succeeds. It fails early, with the tail of the log, when the
// process exits, and after timeout (> 0) with an error naming the health
// URL and the last answer.
func (s *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	p := s.Process()
	if p == nil {
		return fmt.Errorf("%s: not started", s.Spec.Name)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errReadyTimeout)
		defer cancel()
	}
	poll := s.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	start := time.Now()
	t := time.NewTicker(poll)
	defer t.Stop()
	healthy := false
	for {
		if !healthy {
			if err := s.probe(ctx); err == nil {
				healthy = true
				p.Note("health: GET %s answered 200 after %.3f s", s.HealthURL(), time.Since(start).Seconds())
			} else if CredentialsRefused(err) {
				return fmt.Errorf("%s: GET %s: %w: %s", s.Spec.Name, RedactURL(s.HealthURL()), err, CredentialsHint)
			} else {
				s.setLast(err.Error())
			}
		}
		if healthy {
			if s.Ready == nil {
				s.setReady()
				return nil
			}
			err := s.Ready(ctx)
			if err == nil {
				s.setReady()
				p.Note("ready after %.3f s", time.Since(start).Seconds())
				return nil
			}
			if CredentialsRefused(err) {
				return fmt.Errorf("%s: %w: %s", s.Spec.Name, err, CredentialsHint)
			}
			if ctx.Err() == nil && !errors.Is(err, ErrRetry) {
				return err
			}
			s.setLast(err.Error())
		}
		select {
		case <-p.Exited():
			if err := p.ExitError(); err != nil {
				return fmt.Errorf("exited before it was ready: %w", err)
			}
			return fmt.Errorf("%s: stopped before it was ready", s.Spec.Name)
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errReadyTimeout) {
				return fmt.Errorf("%s: not ready after %s: GET %s: last answer: %s", s.Spec.Name, timeout, s.HealthURL(), s.last())
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ErrRetry, wrapped by Ready's error, asks WaitReady to try again.
var ErrRetry = errors.New("not yet")

var errReadyTimeout = errors.New("ready timeout")

func (s *Server) setLast(msg string) {
	s.mu.Lock()
	s.lastErr = msg
	s.mu.Unlock()
}

func (s *Server) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == "" {
		return "none"
	}
	return s.lastErr
}

func (s *Server) setReady() {
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
}

// IsReady reports whether WaitReady succeeded.
func (s *Server) IsReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

func (s *Server) probe(ctx context.Context) error {
	return Probe(ctx, s.client(), s.HealthURL())
}

// Probe GETs url and wants 200 within 5 s.
func Probe(ctx context.Context, hc *http.Client, url string) error {
	return ProbeWithin(ctx, hc, url, 5*time.Second)
}

// ProbeWithin GETs url and wants 200 within d.
func ProbeWithin(ctx context.Context, hc *http.Client, url string, d time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return unwrapURLError(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &ProbeStatusError{Status: resp.StatusCode}
	}
	return nil
}

// ProbeStatusError is a probe answered with a status other than 200.
type ProbeStatusError struct{ Status int }

func (e *ProbeStatusError) Error() string { return fmt.Sprintf("status %d", e.Status) }

// CredentialsRefused reports whether err is an answer 401 (Unauthorized)
// or 403 (Forbidden), from a probe or a JSON query: the server refused the
// credentials sent, or their absence. A loading server does not answer
// so, and waiting does not change it.
func CredentialsRefused(err error) bool {
	var pe *ProbeStatusError
	var se *StatusError
	status := 0
	switch {
	case errors.As(err, &pe):
		status = pe.Status
	case errors.As(err, &se):
		status = se.Status
	}
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// CredentialsHint says what to check when a server refused the
// credentials (CredentialsRefused); it names where they come from, never
// what they are.
const CredentialsHint = "the server refused the credentials (status 401 or 403): check the API key (--api-key or JOULEBENCH_API_KEY) and any user or token in the URL; waiting does not help"

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Stop stops the process group (SIGTERM, grace, SIGKILL), then waits for
// the port to close and for the engine's processes that left the group
// (a daemonizing engine) to be gone, stopping them too, and returns when
// the last was gone. Before Start it returns the zero time.
func (s *Server) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	p := s.Process()
	if p == nil {
		return time.Time{}, nil
	}
	at, err := p.Stop(ctx, grace)
	if err != nil {
		return at, err
	}
	if at, err = s.waitStrays(ctx, p, grace, at); err != nil {
		return at, err
	}
	s.removePidFile()
	return at, nil
}

// GetJSON GETs Base+path, wants 200 and decodes the body into v (may be
// nil); it returns the body decoded as a generic value too (for
// Identity.Raw).
func (s *Server) GetJSON(ctx context.Context, path string, v any) (any, error) {
	return GetJSON(ctx, s.client(), s.Base+path, v)
}

// GetJSON GETs url, wants 200 and decodes the body into v (may be nil);
// it also returns the body decoded as a generic value.
func GetJSON(ctx context.Context, hc *http.Client, url string, v any) (any, error) {
	return DoJSON(ctx, hc, http.MethodGet, url, nil, v)
}

// DoJSON sends body (JSON-encoded when not nil) to url, wants 200 and
// decodes the answer into v (may be nil); it also returns the answer
// decoded as a generic value.
func DoJSON(ctx context.Context, hc *http.Client, method, url string, body, v any) (any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytesReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Method: method, URL: url, Status: resp.StatusCode, Body: snippet(data)}
	}
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	return raw, nil
}

// StatusError is an HTTP answer other than 200.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// IsStatus reports whether err is a StatusError with the given status.
func IsStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}

func snippet(b []byte) string {
	const n = 300
	s := string(b)
	if len(s) > n {
		s = s[:n] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
