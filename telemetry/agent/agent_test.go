package agent

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/clocksync"
	"github.com/joulebench/joulebench/telemetry"
)

// fixedSource is one GPU whose reading n (from 1) draws n W, stamped by
// the source at the agent's clock; it remembers each reading's time.
type fixedSource struct {
	clock telemetry.Clock
	mu    sync.Mutex
	n     int
	at    map[float64]float64 // power → agent time of the reading
}

func (f *fixedSource) Name() string { return "fixed" }
func (f *fixedSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "gpu0", Name: "Test GPU", Method: "power"}}, nil
}
func (f *fixedSource) Read(context.Context) ([]telemetry.Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	t := f.clock()
	if f.at == nil {
		f.at = map[float64]float64{}
	}
	f.at[float64(f.n)] = t
	return []telemetry.Reading{{Device: "gpu0", PowerW: float64(f.n), MemUsedBytes: -1, T: t}}, nil
}
func (f *fixedSource) Close() error { return nil }

func (f *fixedSource) agentTime(powerW float64) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[powerW]
	return t, ok
}

// offsetClock is the wall clock plus an offset that a test may change
// (in microseconds, atomically).
type offsetClock struct{ us atomic.Int64 }

func (c *offsetClock) set(s float64) { c.us.Store(int64(math.Round(s * 1e6))) }
func (c *offsetClock) now() float64  { return telemetry.WallClock() + float64(c.us.Load())/1e6 }

const testToken = "s3cr3t-run-token-7f2a"

// logBuf collects an agent's log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logBuf) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// startAgent serves a fixedSource on 127.0.0.1 with the agent's clock at
// the wall clock + offsetS; the agent stops with the test.
func startAgent(t *testing.T, host string, clock *offsetClock) (url string, src *fixedSource, logs *logBuf) {
	t.Helper()
	return startAgentClock(t, host, clock.now)
}

// startAgentClock is startAgent with the agent's clock now.
func startAgentClock(t *testing.T, host string, now telemetry.Clock) (url string, src *fixedSource, logs *logBuf) {
	t.Helper()
	src = &fixedSource{clock: now}
	logs = &logBuf{}
	srv, err := NewServer(context.Background(), ServerConfig{Source: src, Host: host, Token: []byte(testToken),
		Interval: 20 * time.Millisecond, Clock: now, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, srv.Handler()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent shutdown: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), src, logs
}

// readUntil reads s until it has returned n readings.
func readUntil(t *testing.T, s telemetry.Source, n int) []telemetry.Reading {
	t.Helper()
	var got []telemetry.Reading
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d readings after 5 s, want %d", len(got), n)
		}
		rs, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
		time.Sleep(10 * time.Millisecond)
	}
	return got
}

// An agent whose clock runs 2.5 s ahead of the run clock: the offset
// measured is 2.5 s within half the best round trip, and a reading the
// agent made at its time X lands at X − 2.5 s on the run clock, within
// that same bound (the run clock is the wall clock here, the agent's the
// wall clock + 2.5 s, so the true offset is exactly 2.5 s).
func TestOffsetMeasuredAndSamplesPlacedOnRunClock(t *testing.T) {
	var clk offsetClock
	clk.set(2.5)
	url, fixed, _ := startAgent(t, "node1", &clk)
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken, Clock: telemetry.WallClock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs, err := s.ClockSync(context.Background(), false)
	if err != nil || len(cs) != 1 {
		t.Fatalf("clock sync %+v, %v", cs, err)
	}
	start := cs[0]
	if math.Abs(start.StartOffsetS-2.5) > start.StartRTTS/2+1e-6 || start.StartRTTS <= 0 || start.StartRTTS > clocksync.DefaultMaxRTTS {
		t.Errorf("start offset %.6f s (rtt %.6f s), want 2.5 within rtt/2", start.StartOffsetS, start.StartRTTS)
	}
	if start.Host != "node1" || start.Source != "agent "+url || start.EndOffsetS != nil || start.Probes != clocksync.DefaultProbes {
		t.Errorf("entry %+v", start)
	}
	devs, _ := s.Devices(context.Background())
	if len(devs) != 1 || devs[0].ID != "node1:gpu0" || devs[0].Host != "node1" || devs[0].Name != "Test GPU" {
		t.Errorf("devices %+v", devs)
	}
	for _, r := range readUntil(t, s, 5) {
		x, ok := fixed.agentTime(r.PowerW)
		if !ok {
			t.Fatalf("reading %+v was never made", r)
		}
		// Hand-worked: agent time X, offset 2.5 s → run time X − 2.5 s.
		if d := r.T - (x - 2.5); math.Abs(d) > start.StartRTTS/2+1e-6 {
			t.Errorf("reading of %v W made at agent time %.6f is at %.6f on the run clock, off by %.6f s (bound %.6f)", r.PowerW, x, r.T, d, start.StartRTTS/2)
		}
		if r.Device != "node1:gpu0" || r.MemUsedBytes != -1 {
			t.Errorf("reading %+v", r)
		}
	}
	// The end: measured once, kept.
	end, err := s.ClockSync(context.Background(), true)
	if err != nil || end[0].EndOffsetS == nil || math.Abs(*end[0].EndOffsetS-2.5) > *end[0].EndRTTS/2+1e-6 {
		t.Fatalf("end %+v, %v", end, err)
	}
}

// A drift injected between the start and the end (the agent's clock
// moved 0.2 s) shows in the end offset, and the mapping of the two fails
// the drift bound of 0.05 s: |2.7 − 2.5| = 0.2 > 0.05 + the estimates'
// uncertainty (a few ms on loopback).
func TestDriftBetweenStartAndEnd(t *testing.T) {
	var clk offsetClock
	clk.set(2.5)
	url, _, _ := startAgent(t, "node1", &clk)
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{Name: "n1", URL: url}}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clk.set(2.7)
	cs, err := s.ClockSync(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if c.EndOffsetS == nil || math.Abs(*c.EndOffsetS-2.7) > *c.EndRTTS/2+1e-6 {
		t.Fatalf("end offset %+v, want 2.7", c)
	}
	m := clocksync.Mapping{Start: clocksync.Estimate{OffsetS: c.StartOffsetS, RTTS: c.StartRTTS}}.
		WithEnd(clocksync.Estimate{OffsetS: *c.EndOffsetS, RTTS: *c.EndRTTS})
	if err := m.CheckDrift(0.05); err == nil || !strings.Contains(err.Error(), "drifted") {
		t.Errorf("drift check: %v, want a drift error", err)
	}
	// The name given (n1) prefixes the device IDs; the host is the agent's.
	devs, _ := s.Devices(context.Background())
	if devs[0].ID != "n1:gpu0" || devs[0].Host != "node1" {
		t.Errorf("devices %+v", devs)
	}
}

// A wrong or missing token is refused with a clear error that names the
// agent and never the token; the agent's log and 401 body say nothing of
// what was sent.
func TestTokenRefused(t *testing.T) {
	var clk offsetClock
	url, _, logs := startAgent(t, "node1", &clk)
	const wrong = "wrong-token-9c1e"
	_, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: wrong})
	if err == nil || !strings.Contains(err.Error(), "refused the token") || !strings.Contains(err.Error(), url) {
		t.Fatalf("open with a wrong token: %v", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), testToken) {
		t.Errorf("error echoes a token: %v", err)
	}
	for _, auth := range []string{"", "Bearer " + wrong, "Basic " + testToken, "Bearer " + testToken + "x", "bearer " + testToken} {
		for _, p := range []string{PathClock, PathDevices, PathSamples, "/nothing"} {
			req, _ := http.NewRequest(http.MethodGet, url+p, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || strings.TrimSpace(string(body)) != Unauthorized {
				t.Errorf("%s with %q: %d %q", p, auth, resp.StatusCode, body)
			}
		}
	}
	if l := logs.all(); strings.Contains(l, wrong) || strings.Contains(l, testToken) || !strings.Contains(l, Unauthorized) {
		t.Errorf("agent log:\n%s", l)
	}
	// Open without a token at all.
	if _, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}}); err == nil || !strings.Contains(err.Error(), TokenEnv) {
		t.Errorf("open without a token: %v", err)
	}
}

// Only GET; the token right, an unknown path is 404.
func TestOnlyTheSampleEndpoints(t *testing.T) {
	var clk offsetClock
	url, _, _ := startAgent(t, "node1", &clk)
	for _, c := range []struct {
		method, path string
		want         int
	}{{http.MethodPost, PathClock, http.StatusMethodNotAllowed}, {http.MethodGet, "/v1/exec", http.StatusNotFound},
		{http.MethodGet, "/../etc/passwd", http.StatusNotFound}, {http.MethodGet, PathClock, http.StatusOK}} {
		req, _ := http.NewRequest(c.method, url+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
}

func TestUnreachableAgentNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "agent "+url+"/v1/devices unreachable") {
		t.Fatalf("open of an unreachable agent: %v", err)
	}
}

func TestListenNeedsAnExplicitAddress(t *testing.T) {
	for _, addr := range []string{"", "  ", ":7070", "7070", "localhost"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
	if _, err := Listen(""); err == nil || !strings.Contains(err.Error(), "--listen is required") {
		t.Errorf("Listen(\"\"): %v", err)
	}
}

func TestServerRefusesNoToken(t *testing.T) {
	_, err := NewServer(context.Background(), ServerConfig{Source: &fixedSource{clock: telemetry.WallClock}, Host: "h"})
	if err == nil || !strings.Contains(err.Error(), "token is empty") {
		t.Errorf("NewServer without a token: %v", err)
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if b, err := ReadTokenFile(write("ok", testToken+"\n", 0o600)); err != nil || string(b) != testToken {
		t.Errorf("token %q, %v", b, err)
	}
	for _, c := range []struct{ name, content, want string }{
		{"empty", " \n", "is empty"},
		{"two", "a b\n", "more than one word"},
	} {
		if _, err := ReadTokenFile(write(c.name, c.content, 0o600)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadTokenFile(write("open", testToken, 0o644)); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), testToken) {
		t.Errorf("a token file readable by others: %v", err)
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "none")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing token file: %v", err)
	}
}

// The agent stops cleanly on its context's end while a run streams from
// it; the source then reports the stream's end, naming the agent.
func TestShutdownEndsStreams(t *testing.T) {
	var clk offsetClock
	src := &fixedSource{clock: clk.now}
	srv, err := NewServer(context.Background(), ServerConfig{Source: src, Host: "node1", Token: []byte(testToken), Interval: 10 * time.Millisecond, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, srv.Handler()) }()
	url := "http://" + ln.Addr().String()
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readUntil(t, s, 2)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(ShutdownWait + time.Second):
		t.Fatal("the agent did not stop")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Read(context.Background())
		if err != nil {
			if !strings.Contains(err.Error(), "agent "+url) || !strings.Contains(err.Error(), "stream ended") {
				t.Errorf("read after the agent stopped: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no error after the agent stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Endpoint
		err  bool
	}{
		{"http://10.0.0.5:7070", Endpoint{URL: "http://10.0.0.5:7070"}, false},
		{"node1=http://10.0.0.5:7070/", Endpoint{Name: "node1", URL: "http://10.0.0.5:7070"}, false},
		{"http://h:1/?a=b", Endpoint{}, true},
		{"http://u:p@h:1", Endpoint{}, true},
		{"https://h:1/agent/", Endpoint{URL: "https://h:1/agent"}, false},
		{"10.0.0.5:7070", Endpoint{}, true},
		{"=http://h:1", Endpoint{}, true},
		{"a/b=http://h:1", Endpoint{}, true},
		{"ftp://h:1", Endpoint{}, true},
	} {
		got, err := ParseEndpoint(c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", c.in, got, err)
		}
	}
}

// Two nodes, one 2.5 s ahead of the run clock and one 1 s behind: each
// offset is measured on its own, each node's readings land on the run
// clock (agent time X → X − 2.5 on node1, X + 1 on node2), and the
// devices stay apart, named by host. Two agents reporting one host must
// be named.
func TestTwoNodesEachOnItsOwnClock(t *testing.T) {
	var ahead, behind offsetClock
	ahead.set(2.5)
	behind.set(-1)
	url1, src1, _ := startAgent(t, "node1", &ahead)
	url2, src2, _ := startAgent(t, "node2", &behind)
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url1}, {URL: url2}}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	devs, _ := s.Devices(context.Background())
	if len(devs) != 2 || devs[0].ID != "node1:gpu0" || devs[0].Host != "node1" || devs[1].ID != "node2:gpu0" || devs[1].Host != "node2" {
		t.Fatalf("devices %+v", devs)
	}
	cs, _ := s.ClockSync(context.Background(), false)
	want := map[string]struct {
		off float64
		src *fixedSource
		rtt float64
	}{"node1:gpu0": {2.5, src1, cs[0].StartRTTS}, "node2:gpu0": {-1, src2, cs[1].StartRTTS}}
	for i, c := range cs {
		w := want[devs[i].ID]
		if math.Abs(c.StartOffsetS-w.off) > c.StartRTTS/2+1e-6 {
			t.Errorf("%s: offset %.6f, want %v", c.Host, c.StartOffsetS, w.off)
		}
	}
	seen := map[string]int{}
	for _, r := range readUntil(t, s, 8) {
		w := want[r.Device]
		x, ok := w.src.agentTime(r.PowerW)
		if !ok {
			t.Fatalf("reading %+v was never made", r)
		}
		if d := r.T - (x - w.off); math.Abs(d) > w.rtt/2+1e-6 {
			t.Errorf("%s: reading at agent time %.6f placed at %.6f, off by %.6f s", r.Device, x, r.T, d)
		}
		seen[r.Device]++
	}
	if seen["node1:gpu0"] == 0 || seen["node2:gpu0"] == 0 {
		t.Errorf("readings per device %v", seen)
	}
	if _, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url1}, {URL: url1}}, Token: testToken}); err == nil || !strings.Contains(err.Error(), `both named "node1"`) {
		t.Errorf("two agents of one host: %v", err)
	}
}

// Every Read answers for every device, as a Source does, even straight
// after another Read took what had arrived (a preflight check reading the
// source just before the sampler's first sample): it waits for a fresh
// reading within ReadWait, and past it repeats the device's newest
// reading with its own time (so no energy is added).
func TestEveryReadAnswersForEveryDevice(t *testing.T) {
	var clk offsetClock
	url, _, _ := startAgent(t, "node1", &clk)
	for _, wait := range []time.Duration{0, time.Microsecond} {
		s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken, Clock: telemetry.WallClock, ReadWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		readUntil(t, s, 1)
		var last float64
		for i := 0; i < 5; i++ {
			rs, err := s.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 {
				t.Fatalf("ReadWait %v: read %d straight after another returned nothing", wait, i)
			}
			for _, r := range rs {
				if r.Device != "node1:gpu0" || r.T < last {
					t.Fatalf("ReadWait %v: read %d: %+v after t=%.6f", wait, i, r, last)
				}
				last = r.T
			}
		}
		s.Close()
	}
}
