package openai

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/workload"
)

// lateTransport holds the first read of every response body for delay, so
// that what the server writes meanwhile waits in the receive queue.
type lateTransport struct {
	rt    http.RoundTripper
	delay time.Duration
}

func (l lateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err == nil {
		resp.Body = &lateBody{ReadCloser: resp.Body, delay: l.delay}
	}
	return resp, err
}

type lateBody struct {
	io.ReadCloser
	delay time.Duration
	held  bool
}

func (b *lateBody) Read(p []byte) (int, error) {
	if !b.held {
		b.held = true
		time.Sleep(b.delay)
	}
	return b.ReadCloser.Read(p)
}

// TestChunkReadWithLaterDataIsBounded: the server writes the first token,
// then the second 40 ms later, then the end 40 ms after that. A client
// that reads promptly gets each in its own read: every time is exact. A
// client held up for 100 ms reads the first two tokens in one read (the
// kernel has merged them, with the second's stamp): the first token's time
// is then the second's arrival, and it is counted as bounded, not passed
// off as exact. Tokens written together in one write are counted too: the
// client cannot tell them from merged ones.
func TestChunkReadWithLaterDataIsBounded(t *testing.T) {
	holdStampsOn(t)
	var wroteA, wroteB atomic.Int64
	paced := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		time.Sleep(20 * time.Millisecond)
		wroteA.Store(time.Now().UnixNano())
		send(w, content("a"))
		time.Sleep(40 * time.Millisecond)
		wroteB.Store(time.Now().UnixNano())
		send(w, content("b"))
		time.Sleep(40 * time.Millisecond)
		send(w, finishChunk, usageChunk(1, 2), "[DONE]")
	})
	batched := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), content("c"))
		time.Sleep(40 * time.Millisecond)
		send(w, finishChunk, usageChunk(1, 3), "[DONE]")
	})
	for _, tc := range []struct {
		name        string
		url         string
		late        time.Duration
		chunks      int
		first       bool
		firstAfterB bool // first_token_at is the second token's arrival
	}{
		{"prompt reads", paced.URL, 0, 0, false, false},
		{"held reads", paced.URL, 100 * time.Millisecond, 1, true, true},
		{"server batch", batched.URL, 0, 2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := http.RoundTripper(NewTransport())
			if tc.late > 0 {
				rt = lateTransport{rt: rt, delay: tc.late}
			}
			c := NewClient(tc.url, WithHTTPClient(&http.Client{Transport: rt}), WithClock(wallClock))
			f := &workload.Flight{}
			rec := c.DoFlight(context.Background(), Request{Chat: true}, f)
			if !rec.OK {
				t.Fatalf("request failed: %s", rec.Error)
			}
			chunks, first := f.Bounded()
			if chunks != tc.chunks || first != tc.first {
				t.Errorf("bounded chunks %d (first %v), want %d (first %v)", chunks, first, tc.chunks, tc.first)
			}
			if tc.url != paced.URL {
				return
			}
			a, b := float64(wroteA.Load())/1e9, float64(wroteB.Load())/1e9
			if got := rec.FirstTokenAt - a; !tc.firstAfterB && (got < 0 || got > 0.02) {
				t.Errorf("first_token_at %.3fs after the first write, want under 0.02s", got)
			}
			if got := rec.FirstTokenAt - b; tc.firstAfterB && (got < 0 || got > 0.02) {
				t.Errorf("first_token_at %.3fs after the second write, want the second token's arrival (under 0.02s)", got)
			}
		})
	}
}
