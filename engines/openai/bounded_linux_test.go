package openai

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/workload"
)

// stepTransport lets a test server write in step with the client: it
// reports when the client has the response head (head) and each time a
// body read returns data (reads), and holds the first body read until
// hold is closed (nil: no hold).
type stepTransport struct {
	rt    http.RoundTripper
	head  chan struct{}
	reads chan struct{}
	hold  chan struct{}
}

func (s *stepTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err == nil {
		close(s.head)
		resp.Body = &stepBody{ReadCloser: resp.Body, t: s}
	}
	return resp, err
}

type stepBody struct {
	io.ReadCloser
	t    *stepTransport
	held bool
}

func (b *stepBody) Read(p []byte) (int, error) {
	if !b.held && b.t.hold != nil {
		b.held = true
		<-b.t.hold
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		select {
		case b.t.reads <- struct{}{}:
		default:
		}
	}
	return n, err
}

// wait waits for ch, or fails the server's handler after 5 s.
func wait(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// TestChunkReadWithLaterDataIsBounded: the server writes the first token
// and, 20 ms later, the second, then the end once the client has read.
// A client that reads each token before the next one is written has every
// time exact. A client held until both tokens are in its receive queue
// reads them in one read (the kernel may have merged them, with the
// second's stamp): the first token's time is then the second's arrival,
// counted as bounded, not passed off as exact. Tokens written together in
// one write are counted too: the client cannot tell them from merged ones.
func TestChunkReadWithLaterDataIsBounded(t *testing.T) {
	enginetest.HoldStampsOn(t)
	for _, tc := range []struct {
		name        string
		held        bool
		batch       bool
		chunks      int
		first       bool
		firstAfterB bool // first_token_at is the second token's arrival
	}{
		{"prompt reads", false, false, 0, false, false},
		{"held reads", true, false, 1, true, true},
		{"server batch", false, true, 2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stepTransport{rt: NewTransport(), head: make(chan struct{}), reads: make(chan struct{}, 1)}
			if tc.held {
				st.hold = make(chan struct{})
			}
			var wroteA, wroteB atomic.Int64
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				if !wait(st.head) {
					return
				}
				if tc.batch {
					send(w, content("a"), content("b"), content("c"))
				} else {
					wroteA.Store(time.Now().UnixNano())
					send(w, content("a"))
					if !tc.held && !wait(st.reads) {
						return
					}
					time.Sleep(20 * time.Millisecond)
					wroteB.Store(time.Now().UnixNano())
					send(w, content("b"))
				}
				if tc.held {
					close(st.hold)
				}
				if !wait(st.reads) {
					return
				}
				send(w, finishChunk, usageChunk(1, 3), "[DONE]")
			})
			c := NewClient(srv.URL, WithHTTPClient(&http.Client{Transport: st}), WithClock(wallClock))
			f := &workload.Flight{}
			rec := c.DoFlight(context.Background(), Request{Chat: true}, f)
			if !rec.OK {
				t.Fatalf("request failed: %s", rec.Error)
			}
			chunks, first := f.Bounded()
			if chunks != tc.chunks || first != tc.first {
				t.Errorf("bounded chunks %d (first %v), want %d (first %v)", chunks, first, tc.chunks, tc.first)
			}
			// A bounded first token arrived after the client last found the
			// connection empty (after the response head, before the first
			// write): the interval ends at its time and spans at least the
			// 20 ms between the two writes, at most the whole exchange.
			within := f.FirstWithin().Seconds()
			switch {
			case !first && within != 0:
				t.Errorf("an exact first token has a bound of %v", f.FirstWithin())
			case tc.held && (within < 0.02 || within > rec.FirstTokenAt-rec.SentAt):
				t.Errorf("first token within %.3fs, want 0.02s to %.3fs", within, rec.FirstTokenAt-rec.SentAt)
			}
			if tc.batch {
				return
			}
			a, b := float64(wroteA.Load())/1e9, float64(wroteB.Load())/1e9
			if got := rec.FirstTokenAt - a; !tc.firstAfterB && (got < 0 || got > 0.015) {
				t.Errorf("first_token_at %.3fs after the first write, want under 0.015s", got)
			}
			if got := rec.FirstTokenAt - b; tc.firstAfterB && (got < 0 || got > 0.015) {
				t.Errorf("first_token_at %.3fs after the second write, want the second token's arrival (under 0.015s)", got)
			}
		})
	}
}
