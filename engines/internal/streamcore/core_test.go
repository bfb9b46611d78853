package streamcore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// TestBeginLifecycle: the request lifecycle every client shares. A body
// that did not encode is never sent; the flight's limits win over the
// client's (here an hour); the flight is told when the request is written,
// before the response, only when the client asks; a non-200 answer is a
// failed record with the start of its body.
func TestBeginLifecycle(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/silent": // headers, then nothing until the client gives up
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if r.URL.Query().Get("first") != "" {
				_, _ = io.WriteString(w, "x")
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		case "/busy":
			http.Error(w, "  server\n busy ", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	clock := func() float64 { return 1.7e9 }
	for _, tc := range []struct {
		name      string
		path      string
		encodeErr error
		limits    workload.Limits
		wrote     bool
		wantErr   string
		wantHits  int32
		wantWrote bool
	}{
		{"encode error", "/silent", errors.New("bad extra"), workload.Limits{}, true, "encode request: bad extra", 0, false},
		{"flight timeout", "/silent", nil, workload.Limits{Timeout: 50 * time.Millisecond}, true, "request timeout after 50ms", 1, true},
		{"flight stall", "/silent?first=1", nil, workload.Limits{Stall: 50 * time.Millisecond}, false, "stall timeout: no data for 50ms", 1, false},
		{"http error", "/busy", nil, workload.Limits{}, true, "http 503: server busy", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			var wrote atomic.Bool
			f := &workload.Flight{Limits: tc.limits, OnWritten: func() { wrote.Store(true) }}
			var rec record.Request
			c := Call{Config: Config{HTTP: srv.Client(), Clock: clock, Timeout: time.Hour, ErrorBody: func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }, MaxErrorBody: 100},
				Target: srv.URL + tc.path, EncodeErr: tc.encodeErr, ReportWrote: tc.wrote, TokenTimes: true}
			x := Begin(context.Background(), c, workload.Request{ID: "r1", Phase: "formal", MaxTokens: 8}, f, &rec)
			if x != nil {
				_, err := io.ReadAll(x.Resp.Body)
				rec.Error = x.Describe(err, "stream cut: ")
				if cap(rec.TokenTimes) != 17 { // min(max(8, 16), 4096) + 1
					t.Errorf("room for %d token times, want 17", cap(rec.TokenTimes))
				}
				x.Close()
			}
			if rec.ID != "r1" || rec.Phase != "formal" || rec.MaxTokens != 8 || rec.Error != tc.wantErr {
				t.Errorf("record %+v, want error %q", rec, tc.wantErr)
			}
			if rec.SentAt != 1.7e9 {
				t.Errorf("sent_at %v, want the clock's 1.7e9", rec.SentAt)
			}
			if got := hits.Load(); got != tc.wantHits {
				t.Errorf("%d requests reached the server, want %d", got, tc.wantHits)
			}
			if wrote.Load() != tc.wantWrote {
				t.Errorf("flight told written: %v, want %v", wrote.Load(), tc.wantWrote)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	const h, m = time.Hour, time.Minute
	for _, tc := range []struct {
		name        string
		f           *workload.Flight
		wantT, want time.Duration
	}{
		{"no flight", nil, h, m},
		{"zero limits keep the client's", &workload.Flight{}, h, m},
		{"the flight's win", &workload.Flight{Limits: workload.Limits{Timeout: 2 * m, Stall: 3 * time.Second}}, 2 * m, 3 * time.Second},
	} {
		if gotT, got := Limits(h, m, tc.f); gotT != tc.wantT || got != tc.want {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, gotT, got, tc.wantT, tc.want)
		}
	}
}
