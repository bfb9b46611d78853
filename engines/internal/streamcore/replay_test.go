package streamcore

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type seeHeader struct {
	rt  http.RoundTripper
	got http.Header
}

func (s *seeHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	s.got = req.Header.Clone()
	return s.rt.RoundTrip(req)
}

// A POST with a body reaches the transport marked replayable (the key
// present, nil-valued), the server sees no such header, and the caller's
// request keeps its header as it was.
func TestReplayingMarksWithoutSending(t *testing.T) {
	wire := make(chan http.Header, 2) // what the server received, per request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wire <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	inner := &seeHeader{rt: NewTransport()}
	c := &http.Client{Transport: Replaying(inner)}
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v, ok := inner.got["X-Idempotency-Key"]; !ok || v != nil {
		t.Errorf("transport saw X-Idempotency-Key %v (present %v), want present and nil", v, ok)
	}
	if onWire := <-wire; onWire.Get("X-Idempotency-Key") != "" || len(onWire["X-Idempotency-Key"]) > 0 {
		t.Errorf("the server received X-Idempotency-Key: %v", onWire)
	}
	if _, ok := req.Header["X-Idempotency-Key"]; ok {
		t.Error("the caller's request was modified")
	}
	// A request without a body, or with its own key, is passed as it is.
	req2, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	req2.Header.Set("Idempotency-Key", "k")
	resp, err = c.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := inner.got["X-Idempotency-Key"]; ok {
		t.Errorf("a request with its own key got X-Idempotency-Key too: %v", inner.got)
	}
}
