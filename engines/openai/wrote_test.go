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

// TestDoFlightSaysWrittenBeforeResponse: the flight is told the request
// was written while the server still holds its response (the load
// generator releases the next sends of a burst on it), once.
func TestDoFlightSaysWrittenBeforeResponse(t *testing.T) {
	wrote := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-wrote:
		case <-time.After(10 * time.Second):
			http.Error(w, "the client never said the request was written", http.StatusTeapot)
			return
		}
		streamHeaders(w)
		send(w, content("hi"), finishChunk, usageChunk(1, 1), "[DONE]")
	})
	var calls atomic.Int32
	f := &workload.Flight{ID: "r1", OnWritten: func() {
		if calls.Add(1) == 1 {
			close(wrote)
		}
	}}
	rec := NewClient(srv.URL).DoFlight(context.Background(), Request{ID: "r1", Chat: true, Prompt: "p", MaxTokens: 1}, f)
	if !rec.OK {
		t.Fatalf("not ok: %s", rec.Error)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("told %d times, want 1", n)
	}
}

// TestDoFlightSaysWrittenWhenSendFails: a request that fails before it is
// written still ends the flight's wait for its write.
func TestDoFlightSaysWrittenWhenSendFails(t *testing.T) {
	srv := newServer(t, func(http.ResponseWriter, *http.Request) {})
	url := srv.URL
	srv.Close() // nothing listens: the dial fails
	var calls atomic.Int32
	f := &workload.Flight{ID: "r1", OnWritten: func() { calls.Add(1) }}
	rec := NewClient(url).DoFlight(context.Background(), Request{ID: "r1", Chat: true, Prompt: "p", MaxTokens: 1}, f)
	if rec.OK {
		t.Fatal("ok without a server")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("told %d times, want 1", n)
	}
}
