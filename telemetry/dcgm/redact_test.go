package dcgm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The --dcgm-url's password and query values never appear in an error,
// whatever the failure (unreachable, HTTP error, not dcgm, listed twice,
// vanished mid-run).
func TestErrorsHideURLSecrets(t *testing.T) {
	const pw, q = "dCgMpAsS", "dCgMqUeRy"
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://u:"+pw+"@", 1) + "/metrics?tok=" + q
	}
	notDCGM := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	defer notDCGM.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := withSecrets(closed.URL)
	closed.Close()
	n1 := newExporter(t, "node1-0.prom")
	fails := newExporter(t, "500")
	cases := []struct {
		name string
		urls []string
		want string
	}{
		{"unreachable", []string{closedURL}, "scrape http://u:[redacted]@127.0.0.1"},
		{"http 500", []string{withSecrets(fails.srv.URL)}, "HTTP 500"},
		{"not dcgm", []string{withSecrets(notDCGM.URL)}, "no GPU reports"},
		{"listed twice", []string{withSecrets(n1.srv.URL), withSecrets(n1.srv.URL)}, "listed twice"},
		{"bad scheme", []string{"ftp://u:" + pw + "@h/metrics?tok=" + q}, "want http://HOST:PORT/metrics"},
		{"does not parse", []string{"http://u:" + pw + "@h:port/metrics?tok=" + q}, "does not parse"},
	}
	for _, c := range cases {
		_, err := Open(context.Background(), Options{URLs: c.urls, Timeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
			continue
		}
		for _, s := range []string{pw, q} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error shows %q: %v", c.name, s, err)
			}
		}
	}
	// Mid-run: the endpoint stops answering after Open.
	mid := newExporter(t, "node1-0.prom", "500")
	src, err := Open(context.Background(), Options{URLs: []string{withSecrets(mid.srv.URL)}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background()); err == nil || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), q) {
		t.Errorf("mid-run scrape error: %v", err)
	}
}
