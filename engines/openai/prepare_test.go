package openai

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/workload"
)

// connCounter counts a test server's connections by state.
type connCounter struct {
	mu                   sync.Mutex
	opened, used, closed int
	active               map[net.Conn]bool
	closeFirst           int // close this many fresh connections at once
}

func (cc *connCounter) hook(c net.Conn, s http.ConnState) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch s {
	case http.StateNew:
		cc.opened++
		if cc.closeFirst > 0 {
			cc.closeFirst--
			c.Close()
		}
	case http.StateActive:
		if !cc.active[c] {
			cc.active[c] = true
			cc.used++
		}
	case http.StateClosed, http.StateHijacked:
		cc.closed++
	}
}

func (cc *connCounter) counts() (opened, used, closed int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.opened, cc.used, cc.closed
}

func prepareServer(t *testing.T, closeFirst int) (*httptest.Server, *connCounter) {
	t.Helper()
	cc := &connCounter{active: map[net.Conn]bool{}, closeFirst: closeFirst}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("hi"))
		send(w, finishChunk, usageChunk(1, 1), "[DONE]")
	}))
	srv.Config.ConnState = cc.hook
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cc
}

func burst(n int) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("f%03d", i), Phase: "formal", Chat: true, Prompt: "p", MaxTokens: 4}
	}
	return reqs
}

// eventually waits up to 5 s for cond (server-side connection states are
// seen asynchronously).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
	}
}

// TestPrepareOpensConnectionsAhead: Prepare opens one connection per
// request before anything is sent; the burst then uses them and opens no
// other; release closes the ones left over, and none is leaked.
func TestPrepareOpensConnectionsAhead(t *testing.T) {
	const n, sent = 12, 8
	srv, cc := prepareServer(t, 0)
	c := NewClient(srv.URL)
	reqs := burst(n)
	release := c.Prepare(context.Background(), reqs)
	eventually(t, "12 connections opened", func() bool { o, _, _ := cc.counts(); return o == n })
	var wg sync.WaitGroup
	for _, r := range reqs[:sent] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rec := c.Do(context.Background(), r); !rec.OK {
				t.Errorf("%s: %s", r.ID, rec.Error)
			}
		}()
	}
	wg.Wait()
	// A request that finds an idle connection (one that an earlier
	// request of the burst gave back) takes it instead.
	o, used, _ := cc.counts()
	if o != n || used < 1 || used > sent {
		t.Errorf("%d connections opened, %d used; want %d opened (none during the burst), 1 to %d used", o, used, n, sent)
	}
	release()
	// Some prepared connections may sit idle in the transport (dialed for
	// a request that an idle one served first); the rest were closed by
	// release. Closing the idle ones leaves none open. A dial the
	// transport started for a request that an idle connection then served
	// may still be on its way into the idle pool when the burst ends, so
	// the idle ones are closed again until every one is.
	eventually(t, "every connection closed", func() bool {
		c.http.CloseIdleConnections()
		_, _, cl := cc.counts()
		return cl == n
	})
	if c.prep.Load() != nil {
		t.Error("the preparation outlived its release")
	}
}

// TestPrepareSkipsConnectionsTheServerClosed: a prepared connection that
// the server closed before the burst is not handed to a request (which
// would fail on it): the request dials a new one.
func TestPrepareSkipsConnectionsTheServerClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a closed, unused connection is only detected on Linux")
	}
	const n = 6
	srv, cc := prepareServer(t, 3)
	c := NewClient(srv.URL)
	reqs := burst(n)
	defer c.Prepare(context.Background(), reqs)()
	eventually(t, "3 prepared connections closed by the server", func() bool { _, _, cl := cc.counts(); return cl >= 3 })
	for _, r := range reqs {
		if rec := c.Do(context.Background(), r); !rec.OK {
			t.Fatalf("%s: %s", r.ID, rec.Error)
		}
	}
}

// TestPreparedBodyOnlyForTheSameRequest: a prepared body is sent for the
// request it was encoded from, and not for another request that happens
// to reuse the id.
func TestPreparedBodyOnlyForTheSameRequest(t *testing.T) {
	bodies := make(chan string, 4)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var b [4096]byte
		n, _ := r.Body.Read(b[:])
		bodies <- string(b[:n])
		streamHeaders(w)
		send(w, content("hi"), finishChunk, "[DONE]")
	})
	c := NewClient(srv.URL)
	r := workload.Request{ID: "f1", Phase: "formal", Chat: true, Prompt: "prepared", MaxTokens: 4}
	defer c.Prepare(context.Background(), []workload.Request{r})()
	// The prepared body stands for the request: changing the prompt after
	// Prepare is not seen (the load generator never does).
	changed := r
	changed.Prompt = "changed"
	c.Do(context.Background(), changed)
	other := changed
	other.Phase = "warmup"
	c.Do(context.Background(), other)
	if got := <-bodies; !strings.Contains(got, "prepared") {
		t.Errorf("prepared request sent %s", got)
	}
	if got := <-bodies; !strings.Contains(got, "changed") {
		t.Errorf("another request with the same id sent %s", got)
	}
}

func TestPrepareDialAddr(t *testing.T) {
	proxied := NewTransport()
	proxied.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy:3128"})
	for _, tc := range []struct {
		base string
		tr   http.RoundTripper
		addr string // "" : not dialed ahead
	}{
		{"http://127.0.0.1:8000", nil, "127.0.0.1:8000"},
		{"http://gpu-box/v1", nil, "gpu-box:80"},
		{"https://gpu-box", nil, "gpu-box:443"},
		{"http://[::1]:9/v1", nil, "[::1]:9"},
		{"unix:///run/sock", nil, ""},
		{"http://gpu-box:8000", proxied, ""}, // the transport dials the proxy
	} {
		var opts []Option
		if tc.tr != nil {
			opts = append(opts, WithHTTPClient(&http.Client{Transport: tc.tr}))
		}
		addr, ok := NewClient(tc.base, opts...).dialAddr()
		if (tc.addr != "") != ok || addr != tc.addr {
			t.Errorf("%s: %q %v, want %q", tc.base, addr, ok, tc.addr)
		}
	}
}

// TestPrepareServerDown: when nothing listens, Prepare stops at the first
// refused dial, keeps the bodies, and the requests fail as they would
// have without it.
func TestPrepareServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close()
	c := NewClient(base)
	reqs := burst(50)
	defer c.Prepare(context.Background(), reqs)()
	p := c.prep.Load()
	if len(p.bodies) != 50 || p.conns.Len() != 0 {
		t.Fatalf("%d bodies, %d connections prepared; want 50 and 0", len(p.bodies), p.conns.Len())
	}
	if rec := c.Do(context.Background(), reqs[0]); rec.OK || !strings.Contains(rec.Error, "refused") {
		t.Fatalf("request to a closed port: %+v", rec)
	}
}
