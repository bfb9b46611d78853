package streamcore

import (
	"context"
	"crypto/tls"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// acceptor is a TCP listener on the loopback that keeps what it accepts.
type acceptor struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func listen(t *testing.T) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &acceptor{ln: ln}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
			a.accepted.Add(1)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		a.wg.Wait()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, c := range a.conns {
			c.Close()
		}
	})
	return a
}

func (a *acceptor) addr() string { return a.ln.Addr().String() }

// waitAccepted waits until n connections were accepted (the kernel
// accepted them already: the count only lags) and returns the count.
func (a *acceptor) waitAccepted(n int32) int32 {
	for deadline := time.Now().Add(5 * time.Second); a.accepted.Load() < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return a.accepted.Load()
}

// TestConnPoolFillAndTake: a pool filled with n connections hands them to
// the transport's dialer for requests whose context carries it, to its own
// address only, one each, then the dialer dials as usual; Close closes
// what was not taken.
func TestConnPoolFillAndTake(t *testing.T) {
	a := listen(t)
	const n = prepareDialers + 8 // more than one round of dialers
	p := NewConnPool("tcp", a.addr())
	p.Fill(context.Background(), n)
	if p.Len() != n {
		t.Fatalf("filled %d, want %d", p.Len(), n)
	}
	dial := NewTransport().DialContext

	// Another address, or no pool in the context: a new connection.
	other := listen(t)
	c, err := dial(WithConnPool(context.Background(), p), "tcp", other.addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if p.Len() != n {
		t.Errorf("a dial to another address took from the pool: %d left", p.Len())
	}
	if WithConnPool(context.Background(), nil) != context.Background() {
		t.Error("WithConnPool(nil) changed the context")
	}

	// The pool's address: its connections, then new ones.
	ctx := WithConnPool(context.Background(), p)
	seen := map[net.Conn]bool{}
	for i := range n {
		c, err := dial(ctx, "tcp", a.addr())
		if err != nil {
			t.Fatal(err)
		}
		if seen[c] {
			t.Fatalf("connection %d handed out twice", i)
		}
		seen[c] = true
		if runtime.GOOS == "linux" && StamperOf(c) == nil {
			t.Errorf("pooled connection %T keeps no stamps", c)
		}
	}
	if got := a.waitAccepted(n); p.Len() != 0 || got != n {
		t.Errorf("%d left, %d accepted; want 0, %d", p.Len(), got, n)
	}
	c, err = dial(ctx, "tcp", a.addr())
	if err != nil {
		t.Fatal(err)
	}
	if seen[c] || a.waitAccepted(n+1) != n+1 {
		t.Error("an empty pool handed out a connection again")
	}
	c.Close()
	for c := range seen {
		c.Close()
	}

	// Close closes the rest, and a closed pool hands out nothing.
	p.Fill(context.Background(), 3)
	left := p.conns
	p.Close()
	if p.Len() != 0 {
		t.Errorf("%d left after Close", p.Len())
	}
	for _, c := range left {
		if err := c.SetDeadline(time.Now()); err == nil {
			t.Errorf("connection not closed by Close")
		}
	}
	if c := p.take("tcp", a.addr()); c != nil {
		t.Errorf("a closed pool handed out %v", c)
	}
}

// TestConnPoolFillStops: a dial that fails ends the filling (not n
// failures), and so does a context done before it starts.
func TestConnPoolFillStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	p := NewConnPool("tcp", addr)
	done := make(chan struct{})
	go func() { p.Fill(context.Background(), 100000); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Fill went on after its dials failed")
	}
	if p.Len() != 0 {
		t.Errorf("%d connections to nothing", p.Len())
	}

	a := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = NewConnPool("tcp", a.addr())
	p.Fill(ctx, 50)
	defer p.Close()
	if p.Len() > prepareDialers {
		t.Errorf("a done context still opened %d", p.Len())
	}
}

// TestNilConnPool: a nil pool is no pool.
func TestNilConnPool(t *testing.T) {
	var p *ConnPool
	if p.Len() != 0 || p.take("tcp", "127.0.0.1:1") != nil {
		t.Error("a nil pool has connections")
	}
	p.Close()
}

// TestStamperOf: a stamping connection is found under TLS; a connection
// that keeps no stamps (net.Pipe) has no stamper and is not wrapped.
func TestStamperOf(t *testing.T) {
	s := &seqStamper{}
	conn := struct {
		net.Conn
		Stamper
	}{nil, s}
	if got := StamperOf(tls.Client(conn, &tls.Config{})); got != Stamper(conn) {
		t.Errorf("under TLS: %v", got)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if StamperOf(a) != nil {
		t.Error("a pipe has a stamper")
	}
	if stampReceives(a) != a {
		t.Error("a pipe was wrapped")
	}
	if !connIdle(a) {
		t.Error("a connection that cannot be looked at is not taken as open")
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"http://127.0.0.1:8000", "/v1/completions", "http://127.0.0.1:8000/v1/completions"},
		{"http://127.0.0.1:8000/", "/v1/completions", "http://127.0.0.1:8000/v1/completions"},
		{"http://127.0.0.1:8000/v1", "/v1/completions", "http://127.0.0.1:8000/v1/completions"},
		{"http://127.0.0.1:8000/v1/", "/v1/completions", "http://127.0.0.1:8000/v1/completions"},
		{"http://gw.example/llm/v1?key=abc#frag", "/api/chat", "http://gw.example/llm/api/chat?key=abc"},
		{"http://gw.example/a%2Fb/", "/x", "http://gw.example/a/b/x"},
		{"http://[::1/v1", "/x", "http://[::1/x"}, // no URL: trimmed as text
	} {
		if got := Endpoint(c.base, c.path); got != c.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
}
