package workload

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallHub serves one file o/n/x.json directly (no redirect). Its first
// `stallGets` GETs send the headers and half the body and then nothing
// (or, with stallHeaders, nothing at all) until the client gives up; later
// GETs honour Range. HEAD stalls its headers when headHangs is set.
type stallHub struct {
	data []byte
	stallCfg
	gets   atomic.Int32
	mu     sync.Mutex
	ranges []string // Range of each GET, in order
}

// stallCfg says how a stallHub misbehaves.
type stallCfg struct {
	stallGets               int32
	stallHeaders, headHangs bool
}

func (s *stallHub) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func (s *stallHub) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", hubCommit)
		if r.Method == http.MethodHead {
			if s.headHangs {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
			return
		}
		n := s.gets.Add(1)
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.mu.Unlock()
		if n <= s.stallGets {
			if !s.stallHeaders {
				w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
				w.WriteHeader(http.StatusOK)
				w.Write(s.data[:len(s.data)/2])
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done() // stalls until the client hangs up
			return
		}
		http.ServeContent(w, r, "x.json", time.Time{}, bytes.NewReader(s.data))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A Hub that stalls (after the headers, or before them) no longer hangs
// the download: the idle and header timeouts end the attempt, what came
// is kept, and the next attempt resumes it with a Range request.
func TestHubStallTimeouts(t *testing.T) {
	data := []byte(strings.Repeat("0123456789", 1000))
	half := strconv.Itoa(len(data) / 2)
	cases := []struct {
		name      string
		hub       stallCfg
		attempts  int
		wantErr   string   // "" : the file is fetched
		wantRange []string // Range header of each GET
	}{
		{"body stalls once, resumed", stallCfg{stallGets: 1}, 3, "", []string{"", "bytes=" + half + "-"}},
		{"body stalls always", stallCfg{stallGets: 9}, 2, "download stalled: nothing received for", []string{"", "bytes=" + half + "-"}},
		{"headers stall once", stallCfg{stallGets: 1, stallHeaders: true}, 3, "", []string{"", ""}},
		{"headers never come", stallCfg{stallGets: 9, stallHeaders: true}, 2, "no response headers within", []string{"", ""}},
		{"HEAD never answers", stallCfg{headHangs: true}, 2, "no response headers within", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sh := &stallHub{data: data, stallCfg: c.hub}
			srv := sh.serve(t)
			var notes []string
			h := &Hub{Endpoint: srv.URL, Client: srv.Client(), CacheDir: t.TempDir(),
				HeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond, Attempts: c.attempts,
				Note: func(m string) { notes = append(notes, m) }}
			f, err := ParseHubFile("hf:o/n/x.json")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path, _, err := h.Fetch(ctx, f)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
					t.Errorf("fetched %d bytes, not the file's %d", len(got), len(data))
				}
			}
			if gets := len(sh.asked()); gets > 1 && len(notes) != gets-1 {
				t.Errorf("%d GETs but %d notes of a resumed attempt: %q", gets, len(notes), notes)
			}
			if got := sh.asked(); strings.Join(got, ",") != strings.Join(c.wantRange, ",") {
				t.Errorf("Range of each GET %q, want %q", got, c.wantRange)
			}
		})
	}
}

// The client built when none is given has connect and header timeouts
// (http.DefaultClient has none).
func TestHubDefaultClientTimeouts(t *testing.T) {
	h := &Hub{ConnectTimeout: 5 * time.Second, HeaderTimeout: 7 * time.Second}
	tr, ok := h.client().Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", h.client().Transport)
	}
	if tr.ResponseHeaderTimeout != 7*time.Second || tr.TLSHandshakeTimeout != 5*time.Second || tr.DialContext == nil {
		t.Errorf("header %v, TLS %v: want 7s, 5s and a dialer with a timeout", tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout)
	}
	if h.client() != h.client() {
		t.Errorf("a new client for every request")
	}
}
