package external_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/external"
)

// TestResolveModel: with no --model, the model is the first listed; a
// server that is loading (503) is asked again until it lists one, with a
// note while it waits; one that is not there fails at once, the error
// leading with the refused connection; one that lists none fails at once.
func TestResolveModel(t *testing.T) {
	const models = `{"object":"list","data":[{"id":"m1"},{"id":"m2"}]}`
	for _, tc := range []struct {
		name    string
		loading int32  // the 503 answers before the list
		body    string // the list ("": no server)
		timeout time.Duration
		want    string // the model, or the error's start (after "--engine-url URL: " in the CLI)
		noted   bool
	}{
		{"listed", 0, models, time.Minute, "m1", false},
		{"loading, then listed", 3, models, time.Minute, "m1", true},
		{"loading for ever", 1 << 30, models, 400 * time.Millisecond, "no --model given, and the server did not list its models within", true},
		{"lists none", 0, `{"object":"list","data":[]}`, time.Minute, "no --model given and the server does not list one: GET ", false},
		{"nothing listens", 0, "", time.Minute, "connection refused: nothing listens there", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			if tc.body != "" {
				var asked atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if asked.Add(1) <= tc.loading {
						w.WriteHeader(http.StatusServiceUnavailable)
						io.WriteString(w, `{"error":"loading model"}`)
						return
					}
					io.WriteString(w, tc.body)
				}))
				t.Cleanup(srv.Close)
				addr = strings.TrimPrefix(srv.URL, "http://")
			}
			var mu sync.Mutex
			var notes []string
			e, err := external.New(external.Config{URL: "http://" + addr, NoteEvery: 100 * time.Millisecond, Note: func(s string) {
				mu.Lock()
				notes = append(notes, s)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			start := time.Now()
			m, err := e.ResolveModel(ctx)
			got := m
			if err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q...", got, tc.want)
			}
			if tc.name == "nothing listens" && time.Since(start) > 5*time.Second {
				t.Errorf("%q after %s", got, time.Since(start))
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.noted != (len(notes) > 0) {
				t.Errorf("waited %s, notes %q", time.Since(start), notes)
			}
			if tc.loading == 1<<30 && (len(notes) == 0 || !strings.Contains(notes[0], "waiting for openai at http://"+addr+" to list its models") ||
				!strings.Contains(notes[0], "status 503")) {
				t.Errorf("notes %q", notes)
			}
		})
	}
}

// TestPortOutOfRange: a port that cannot be one is an invalid URL, said
// at once, not a server that lists no model.
func TestPortOutOfRange(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:99999", "http://127.0.0.1:0"} {
		_, err := external.New(external.Config{URL: u})
		if err == nil || !strings.Contains(err.Error(), "is not a port number (1 to 65535)") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := external.New(external.Config{URL: "http://127.0.0.1:65535"}); err != nil {
		t.Errorf("65535: %v", err)
	}
}
