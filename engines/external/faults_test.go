package external_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/external"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestConnectionRefusedFailsFast(t *testing.T) {
	e, err := external.New(external.Config{URL: "http://user:pw@" + freeAddr(t) + "/v1?key=s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = e.WaitReady(context.Background(), 20*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "connection refused: nothing listens there") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s to say so", d)
	}
	for _, secret := range []string{"pw", "s3cret"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error shows %q: %v", secret, err)
		}
	}
}

func TestSlowStartNotesProgress(t *testing.T) {
	// Answers 503 (loading) until the third note was given, then 200.
	var notes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notes.Load() < 3 {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	defer srv.Close()
	var got []string
	e, err := external.New(external.Config{URL: srv.URL + "?key=s3cret", NoteEvery: 10 * time.Millisecond,
		Note: func(s string) { got = append(got, s); notes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitReady(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 {
		t.Fatalf("notes %q", got)
	}
	if !strings.Contains(got[0], "waiting for openai at http://127.0.0.1:") || !strings.Contains(got[0], "last answer: status 503") ||
		strings.Contains(got[0], "s3cret") {
		t.Fatalf("note %q", got[0])
	}
}

func TestSecretsSentNeverShown(t *testing.T) {
	type seen struct{ path, query, user, pass string }
	ch := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		ch <- seen{r.URL.Path, r.URL.RawQuery, u, p}
		json.NewEncoder(w).Encode(map[string]any{"data": []any{map[string]any{"id": "m", "max_model_len": 8}}})
	}))
	defer srv.Close()
	raw := strings.Replace(srv.URL, "http://", "http://bob:pw@", 1) + "/v1/?key=s3cret"
	e, err := external.New(external.Config{URL: raw, Model: "m", MetricsPath: "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitReady(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if s := <-ch; s != (seen{"/v1/models", "key=s3cret", "bob", "pw"}) {
		t.Fatalf("health probe %+v", s)
	}
	if _, err := e.Identity(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(e.Info())
	for _, shown := range []string{string(info), e.Info().URL} {
		if strings.Contains(shown, "s3cret") || strings.Contains(shown, ":pw@") {
			t.Fatalf("secret shown: %s", shown)
		}
	}
	if !strings.Contains(e.Info().URL, "key=[redacted]") || !strings.Contains(e.Info().URL, "bob:[redacted]@") {
		t.Fatalf("info URL %q", e.Info().URL)
	}
	// The streaming clients get the whole URL (they keep query and user).
	if b := e.BaseURL(); b != strings.TrimSuffix(strings.Replace(raw, "/v1/", "", 1), "") {
		t.Fatalf("base %q", b)
	}
	if m := e.MetricsURL(); !strings.HasSuffix(m, "/metrics?key=s3cret") {
		t.Fatalf("metrics %q", m)
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8000", "ftp://h/", "http://", "http://u:s3cret@%zz"} {
		_, err := external.New(external.Config{URL: u})
		if err == nil {
			t.Errorf("%q accepted", u)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

// A server that answers 401 or 403 refused the credentials: waiting for it
// is useless, so WaitReady and ResolveModel fail at once, saying so and
// showing none of the credentials. Before, 401 was taken for "still
// loading" and the run waited out ready_timeout (20 minutes).
func TestCredentialsRefusedFailsFast(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, `{"error":"invalid key"}`, status)
			}))
			defer srv.Close()
			raw := strings.Replace(srv.URL, "http://", "http://bob:pw@", 1) + "/v1?key=s3cret"
			e, err := external.New(external.Config{URL: raw})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			werr := e.WaitReady(ctx, 20*time.Minute)
			_, merr := e.ResolveModel(ctx)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %s to say so", d)
			}
			for name, err := range map[string]error{"WaitReady": werr, "ResolveModel": merr} {
				if err == nil || !strings.Contains(err.Error(), "the server refused the credentials") ||
					!strings.Contains(err.Error(), "status "+strconv.Itoa(status)) {
					t.Errorf("%s: %v, want the credentials refused", name, err)
					continue
				}
				for _, secret := range []string{"pw", "s3cret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("%s: the error shows %q: %v", name, secret, err)
					}
				}
			}
		})
	}
}
