package streamcore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// streamServer answers 200 with one chunk, then holds the stream open until
// the client goes.
func streamServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "data: a\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func unixClock() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func call(srv *httptest.Server, target string) Call {
	return Call{Config: Config{HTTP: &http.Client{Transport: NewTransport()}, Clock: unixClock, Timeout: time.Hour,
		Redact: func(s string) string { return strings.ReplaceAll(s, "secret", "***") }}, Target: target}
}

// TestDescribeSaysWhy: every reason a send or a read fails, as the record
// says it: the caller's cancellation (with its cause), the request's own
// timeout and stall timeout, a network timeout, and any other error with
// its prefix, without net/url's "Post <url>:" and with secrets redacted.
func TestDescribeSaysWhy(t *testing.T) {
	srv := streamServer(t)
	begin := func(ctx context.Context) (*Exchange, *record.Request) {
		t.Helper()
		var rec record.Request
		x := Begin(ctx, call(srv, srv.URL+"/v1/completions"), workload.Request{ID: "r"}, nil, &rec)
		if x == nil {
			t.Fatalf("no exchange: %s", rec.Error)
		}
		t.Cleanup(x.Close)
		return x, &rec
	}
	readErr := errors.New("read secret-token: reset")

	ctx, cancel := context.WithCancelCause(context.Background())
	x, _ := begin(ctx)
	cancel(errors.New("interrupt signal"))
	if got := x.Describe(readErr, "stream cut: "); got != "cancelled: interrupt signal" {
		t.Errorf("caller's cause: %q", got)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	x, _ = begin(ctx)
	cancel2()
	if got := x.Describe(readErr, "stream cut: "); got != "cancelled" {
		t.Errorf("caller cancelled: %q", got)
	}

	x, _ = begin(context.Background())
	x.stall = 2 * time.Second
	x.Cancel(errStall)
	if got := x.Describe(readErr, "stream cut: "); got != "stall timeout: no data for 2s" {
		t.Errorf("stall: %q", got)
	}
	x, _ = begin(context.Background())
	x.Cancel(errTimeout)
	if got := x.Describe(readErr, "stream cut: "); got != "request timeout after 1h0m0s" {
		t.Errorf("timeout: %q", got)
	}

	x, _ = begin(context.Background())
	netTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	if got := x.Describe(netTimeout, "stream cut: "); got != "request timeout: read tcp: i/o timeout" {
		t.Errorf("network timeout: %q", got)
	}
	if got := x.Describe(readErr, "stream cut: "); got != "stream cut: read ***-token: reset" {
		t.Errorf("other error: %q", got)
	}
}

// TestSendFailures: a request that cannot be built, or a server that
// cannot be reached, is a failed record whose error says so, without the
// URL that net/url puts in front.
func TestSendFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct{ name, target, want string }{
		{"bad URL", "http://[::1/v1/completions", "build request: missing ']' in host"},
		{"refused", "http://" + closed + "/v1/completions?key=secret", "send: dial tcp " + closed + ": connect: connection refused"},
	} {
		var rec record.Request
		x := Begin(context.Background(), call(nil, c.target), workload.Request{ID: "r"}, nil, &rec)
		if x != nil {
			x.Close()
			t.Fatalf("%s: sent", c.name)
		}
		if !strings.HasPrefix(rec.Error, c.want) || strings.Contains(rec.Error, "Post ") || strings.Contains(rec.Error, "secret") {
			t.Errorf("%s: error %q, want it to start %q", c.name, rec.Error, c.want)
		}
		if rec.SentAt == 0 || rec.DoneAt < rec.SentAt {
			t.Errorf("%s: sent_at %v, done_at %v", c.name, rec.SentAt, rec.DoneAt)
		}
	}
}

// TestExchangeNow: the arrival times of a response's reads come from the
// connection's receive stamps (on Linux), never before sent_at, nor after
// the clock's reading.
func TestExchangeNow(t *testing.T) {
	srv := streamServer(t)
	var rec record.Request
	x := Begin(context.Background(), call(srv, srv.URL), workload.Request{ID: "r"}, nil, &rec)
	if x == nil {
		t.Fatal(rec.Error)
	}
	defer x.Close()
	if runtime.GOOS == "linux" && x.Stamper() == nil {
		t.Error("no receive stamps on Linux")
	}
	buf := make([]byte, 64)
	if _, err := x.Resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	got := x.Now()
	if now := unixClock(); got < rec.SentAt || got > now {
		t.Errorf("arrival %.6f outside [sent_at %.6f, now %.6f]", got, rec.SentAt, now)
	}
	if again := x.Now(); again != got {
		t.Errorf("the same read's time changed: %.9f then %.9f", got, again)
	}
}
