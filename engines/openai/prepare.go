package openai

import (
	"context"
	"net"
	"net/http"
	"net/url"

	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/workload"
)

// A burst of streamed requests (the unlimited stage) is where first-token
// times are most at risk: while the client is still sending, the first
// chunks of the earliest requests wait unread, later chunks arrive and the
// kernel merges them, and the first chunk's receive stamp becomes a later
// one's (see streamcore.ReadStamp). Prepare shortens the burst to little more than
// the writes: the bodies are encoded and the connections opened before
// the first send.

// maxPrepareDials bounds the connections Prepare opens.
const maxPrepareDials = 1 << 14

// prepared is what Prepare made ready for one burst.
type prepared struct {
	bodies map[string]preparedBody // by request id
	conns  *streamcore.ConnPool
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
		p.conns = streamcore.NewConnPool("tcp", addr)
		p.conns.Fill(ctx, min(len(reqs), maxPrepareDials))
	}
	if old := c.prep.Swap(p); old != nil {
		old.conns.Close()
	}
	return func() {
		c.prep.CompareAndSwap(p, nil)
		p.conns.Close()
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
