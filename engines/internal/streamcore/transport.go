package streamcore

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

const (
	// connReadBufSize is the transport's read buffer per connection: at
	// most this much is read from the socket per recvmsg. When the client
	// falls behind (the ingest ceiling) several of the server's writes wait
	// in the socket, and one read takes more of them: fewer system calls
	// and acknowledgements per token, for 32 KiB per open connection.
	connReadBufSize = 32 << 10
	// prepareDialers is how many connections a pool opens at once.
	prepareDialers = 32
)

// NewTransport returns the transport tuned for many long-lived streams to
// one host: no limit on connections, thousands kept idle for reuse, no
// compression (it would delay chunks), HTTP/1.1 only (one stream per
// connection, as benchmark clients do). It asks the kernel to stamp what
// each connection receives (see arrival.go) and takes a connection a
// ConnPool in the request's context opened ahead of time when there is one.
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           stampingDialer(dialer),
		MaxIdleConns:          0, // no limit
		MaxIdleConnsPerHost:   4096,
		MaxConnsPerHost:       0,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 0,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ReadBufferSize:        connReadBufSize,
	}
}

// NewConnPool returns an empty pool of connections to addr on network.
func NewConnPool(network, addr string) *ConnPool { return &ConnPool{network: network, addr: addr} }

// ConnPool holds connections opened ahead of a burst. The stamping dialer
// takes one from the pool in a request's context before dialing.
type ConnPool struct {
	network, addr string

	mu    sync.Mutex
	conns []net.Conn
}

type connPoolKey struct{}

// WithConnPool returns ctx carrying p for the dialer (ctx itself when p is
// nil). The transport keeps a request context's values when it dials.
func WithConnPool(ctx context.Context, p *ConnPool) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, connPoolKey{}, p)
}

func connPoolFrom(ctx context.Context) *ConnPool {
	p, _ := ctx.Value(connPoolKey{}).(*ConnPool)
	return p
}

// Fill opens up to n connections, prepareDialers at a time, and stops at
// the first failure or when ctx is done.
func (p *ConnPool) Fill(ctx context.Context, n int) {
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
func (p *ConnPool) take(network, addr string) net.Conn {
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

// Close closes the connections not taken (nothing on a nil pool).
func (p *ConnPool) Close() {
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

// Len is the number of connections opened and not yet taken.
func (p *ConnPool) Len() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}
