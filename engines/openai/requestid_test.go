package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequestIDHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runID  string
		reqID  string
		header string
	}{
		{"run and request", "20250101T000000Z-benchmark-1.5-vllm", "f000042", "20250101T000000Z-benchmark-1.5-vllm-f000042"},
		{"no run id", "", "w3", "w3"},
		{"no request id", "run1", "", "run1"},
		{"neither", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan []string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Values("X-Request-Id")
				streamHeaders(w)
				fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			}))
			defer srv.Close()
			var opts []Option
			if tc.runID != "" {
				opts = append(opts, WithRunID(tc.runID))
			}
			rec := NewClient(srv.URL, opts...).Do(context.Background(), Request{ID: tc.reqID, Chat: true, Prompt: "p"})
			if !rec.OK {
				t.Fatalf("request failed: %s", rec.Error)
			}
			h := <-got
			switch {
			case tc.header == "" && len(h) != 0:
				t.Errorf("X-Request-Id = %q, want none", h)
			case tc.header != "" && (len(h) != 1 || h[0] != tc.header):
				t.Errorf("X-Request-Id = %q, want [%q]", h, tc.header)
			}
		})
	}
}
