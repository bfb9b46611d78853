package openai

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/joulebench/joulebench/workload"
)

// A burst of streamed requests (the unlimited stage) is where first-token
// times are most at risk: while the client is still sending, the first
// chunks of the earliest requests wait unread, later chunks arrive and the
// kernel merges them, and the first chunk's receive stamp becomes a later
// one's (see readStamp). Prepare shortens the burst to little more than
// the writes: the bodies are encoded and the connections opened before
// the first send.

// maxPrepareDials bounds the connections Prepare opens, and prepareDialers
// how many it opens at once.
const (
	maxPrepareDials = 1 << 14
	prepareDialers  = 32
)

// prepared is what Prepare made ready for one burst.
type prepared struct {
	bodies map[string]preparedBody // by request id
	conns  *connPool
}

type preparedBody struct {
	phase, promptID string // checked against the request sent with the id
	body            []byte
	target          string
}

// body returns the prepared body of r, if there is one.
func (p *prepared) body(r workload.Request) ([]byte, string, bool) {
	if p == nil {
		return nil, "", false
	}
	b, ok := p.bodies[r.ID]
	if !ok || b.phase != r.Phase || b.promptID != r.PromptID {
		return nil, "", false
	}
	return b.body, b.target, true
}

// Prepare (the loadgen.Preparer ability) gets a burst of reqs ready: every
// body encoded, and one connection per request opened to the server (with
// receive stamps), which the transport takes instead of dialing when it
// has no idle connection. It is best effort: a body that does not encode
// is encoded (and fails) at send time, and dialing stops at the first
// failure. release forgets the bodies and closes the connections left
// unused; Prepare replaces an earlier preparation that was not released.
func (c *Client) Prepare(ctx context.Context, reqs []workload.Request) (release func()) {
	p := &prepared{bodies: make(map[string]preparedBody, len(reqs))}
	for _, r := range reqs {
		if body, target, err := c.encode(r); err == nil {
			p.bodies[r.ID] = preparedBody{phase: r.Phase, promptID: r.PromptID, body: body, target: target}
		}
	}
	if addr, ok := c.dialAddr(); ok {
		p.conns = &connPool{network: "tcp", addr: addr}
		p.conns.fill(ctx, min(len(reqs), maxPrepareDials))
	}
	if old := c.prep.Swap(p); old != nil {
		old.conns.close()
	}
	return func() {
		c.prep.CompareAndSwap(p, nil)
		p.conns.close()
	}
}

// dialAddr is the address the transport dials for the server: host:port
// of the endpoint, when requests go there directly (no proxy).
func (c *Client) dialAddr() (string, bool) {
	u, err := url.Parse(c.chatURL)
	if err != nil || u.Host == "" {
		return "", false
	}
	if t, ok := c.http.Transport.(*http.Transport); ok && t.Proxy != nil {
		if pu, err := t.Proxy(&http.Request{URL: u}); err != nil || pu != nil {
			return "", false
		}
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	case u.Scheme == "http":
		port = "80"
	default:
		return "", false
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// connPool holds connections opened ahead of a burst. The stamping dialer
// takes one from the pool in a request's context before dialing.
type connPool struct {
	network, addr string

	mu    sync.Mutex
	conns []net.Conn
}

type connPoolKey struct{}

// withConnPool returns ctx carrying p for the dialer (ctx itself when p is
// nil). The transport keeps a request context's values when it dials.
func withConnPool(ctx context.Context, p *connPool) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, connPoolKey{}, p)
}

func connPoolFrom(ctx context.Context) *connPool {
	p, _ := ctx.Value(connPoolKey{}).(*connPool)
	return p
}

// fill opens up to n connections, prepareDialers at a time, and stops at
// the first failure or when ctx is done.
func (p *connPool) fill(ctx context.Context, n int) {
	dial := stampingDialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range min(n, prepareDialers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				c, err := dial(ctx, p.network, p.addr)
				if err != nil {
					cancel()
					continue
				}
				p.mu.Lock()
				p.conns = append(p.conns, c)
				p.mu.Unlock()
			}
		}()
	}
feed:
	for range n {
		select {
		case jobs <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
}

// take returns an opened connection to addr that the server has not
// closed meanwhile, or nil.
func (p *connPool) take(network, addr string) net.Conn {
	if p == nil || network != p.network || addr != p.addr {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) > 0 {
		c := p.conns[len(p.conns)-1]
		p.conns[len(p.conns)-1] = nil
		p.conns = p.conns[:len(p.conns)-1]
		if connIdle(c) {
			return c
		}
		c.Close()
	}
	return nil
}

// close closes the connections not taken.
func (p *connPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
