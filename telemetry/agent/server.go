package agent

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// DefaultInterval is the agent's sampling interval unless set: finer than
// any profile's, so that the run's audit of gaps holds whatever the run
// samples at.
const DefaultInterval = 100 * time.Millisecond

// ServerConfig is what an agent serves.
type ServerConfig struct {
	// Source is the host's local power source; the server reads it, one
	// read at a time, and does not close it.
	Source telemetry.Source
	// Host names the node; it is every device's Host.
	Host string
	// Token is the per-run bearer token (required).
	Token []byte
	// Interval is the sampling interval of a sample stream (0:
	// DefaultInterval).
	Interval time.Duration
	// Clock is the agent's clock (nil: telemetry.WallClock); the source
	// should read the same.
	Clock telemetry.Clock
	// Logf receives one line per notable event (nil: dropped). No line
	// holds the token or anything a client sent.
	Logf func(string)
}

// Server serves one host's power samples (see the package comment).
type Server struct {
	cfg  ServerConfig
	devs []record.Device
	// readMu serialises the source's reads across the streams.
	readMu sync.Mutex
}

// NewServer checks cfg and lists the source's devices.
func NewServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	switch {
	case cfg.Source == nil:
		return nil, errors.New("agent: no power source")
	case len(cfg.Token) == 0:
		return nil, errors.New("agent: the token is empty")
	case strings.TrimSpace(cfg.Host) == "":
		return nil, errors.New("agent: no host name")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = telemetry.WallClock
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string) {}
	}
	devs, err := cfg.Source.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent: telemetry %s: %w", cfg.Source.Name(), err)
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("agent: telemetry %s lists no device", cfg.Source.Name())
	}
	for i := range devs {
		devs[i].Host = cfg.Host
	}
	return &Server{cfg: cfg, devs: devs}, nil
}

// Handler is the agent's HTTP API: the three GET endpoints behind the
// bearer token.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathClock, s.clock)
	mux.HandleFunc("GET "+PathDevices, s.devices)
	mux.HandleFunc("GET "+PathSamples, s.samples)
	return s.authorize(mux)
}

// authorize answers 401 to a request without the token, before anything
// else (a stranger learns no path).
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), s.cfg.Token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="joulebench agent"`)
			http.Error(w, Unauthorized, http.StatusUnauthorized)
			s.cfg.Logf(fmt.Sprintf("refused %s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, Unauthorized))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) clock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, ClockReply{T: s.cfg.Clock()})
}

func (s *Server) devices(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, DevicesReply{Host: s.cfg.Host, Source: s.cfg.Source.Name(), IntervalS: s.cfg.Interval.Seconds(), Devices: s.devs})
}

// samples streams readings, one NDJSON line each, a first set at once and
// one per interval, until the client goes or the server stops. A read
// error of the source ends the stream after a last line
// {"error": "..."} (the client reports it).
func (s *Server) samples(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	flusher, _ := w.(http.Flusher)
	ctx := r.Context()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		rs, err := s.read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.cfg.Logf("telemetry " + s.cfg.Source.Name() + ": read: " + err.Error())
			_ = enc.Encode(map[string]string{"error": "telemetry " + s.cfg.Source.Name() + ": " + err.Error()})
			_ = bw.Flush()
			return
		}
		for _, x := range rs {
			if err := enc.Encode(x); err != nil {
				return
			}
		}
		if err := bw.Flush(); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read reads the source once and stamps the readings without their own
// time with the agent's clock.
func (s *Server) read(ctx context.Context) ([]Sample, error) {
	s.readMu.Lock()
	rs, err := s.cfg.Source.Read(ctx)
	now := s.cfg.Clock()
	s.readMu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]Sample, len(rs))
	for i, x := range rs {
		t := x.T
		if t == 0 {
			t = now
		}
		out[i] = Sample{T: t, Device: x.Device, PowerW: x.PowerW, EnergyJ: x.EnergyJ, HasEnergy: x.HasEnergy, MemUsedBytes: x.MemUsedBytes}
	}
	return out, nil
}

// ShutdownWait bounds how long Serve waits for requests in progress once
// its context is done.
const ShutdownWait = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down: the sample
// streams end (their context is ctx's) and the requests in progress get
// ShutdownWait to finish. It returns nil after a shutdown, else the
// server's error.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownWait)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Listen checks that addr is given explicitly (host and port: the agent
// has no default address, so that it never listens where nobody chose)
// and listens on it.
func Listen(addr string) (net.Listener, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return nil, errors.New("agent: --listen is required: the address to serve on, e.g. --listen 10.0.0.5:7070 (an address on the cluster's network) or --listen 127.0.0.1:7070")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("agent: --listen %q: want HOST:PORT: %w", addr, err)
	}
	if host == "" {
		return nil, fmt.Errorf("agent: --listen %q names no host: give the address to bind explicitly (0.0.0.0:%s to serve on every interface)", addr, port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent: listen on %s: %w", addr, err)
	}
	return ln, nil
}
