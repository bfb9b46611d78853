package workload

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer written by the log package from the
// transport's goroutines and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An endpoint with a path and a query (a signed mirror): the file's path
// goes after the endpoint's path and the query after the whole path
// (it was placed before the path: ".../mirror?sig=s3cret/datasets/...").
// That endpoint answers HEAD with a body echoing the request, token
// included: net/http found it on the idle connection and logged it through
// the log package ("Unsolicited response received on idle HTTP channel
// starting with ..."), unredacted on stderr. The HEAD's connection is now
// closed after its answer, so nothing is logged.
//
// The test swaps the log package's output (global) and restores it: not
// parallel.
func TestHubEndpointQueryAndHeadWithBody(t *testing.T) {
	const token, sig = "hf_TOKENs3cret", "s3cret"
	data := []byte(`{"prompt":"hi"}` + "\n")
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		if r.URL.Path != "/mirror/datasets/o/n/resolve/main/small.jsonl" || r.URL.RawQuery != "sig="+sig {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodHead {
			w.Header().Set("X-Repo-Commit", hubCommit)
			w.Write(data)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		echo := fmt.Sprintf("%s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nX-Repo-Commit: %s\r\nContent-Length: %d\r\n\r\n%s", hubCommit, len(data), echo)
		buf.Flush()
		time.Sleep(200 * time.Millisecond) // the connection stays open with the body on it
	}))
	t.Cleanup(srv.Close)

	var logged lockedBuffer
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(prev); log.SetFlags(flags) })

	h := &Hub{Endpoint: srv.URL + "/mirror/?sig=" + sig, Token: token, CacheDir: t.TempDir()}
	f, err := ParseHubFile("hf:o/n/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p, o, err := h.Fetch(context.Background(), f)
	if err != nil {
		t.Fatalf("fetch: %v (asked %q)", err, asked)
	}
	if want := srv.URL + "/mirror/datasets/o/n/resolve/main/small.jsonl?sig=" + sig; h.resolveURL(f) != want {
		t.Errorf("resolve URL %s, want %s", h.resolveURL(f), want)
	}
	if p == "" || o.Revision != hubCommit || strings.Contains(o.URL, sig) {
		t.Errorf("path %q, origin %+v", p, o)
	}
	time.Sleep(300 * time.Millisecond) // past the server's hold: a log line would be written by now
	if s := logged.String(); s != "" {
		t.Errorf("net/http logged:\n%s", s)
	}
}
