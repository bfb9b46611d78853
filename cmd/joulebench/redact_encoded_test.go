package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// encodedEchoes are the forms in which echoServerEncoded returns the key
// it was sent: base64 (both alphabets, padded and not, alone and inside a
// base64'd "Bearer KEY" and JSON document at each byte alignment),
// percent-encoded and JSON-escaped.
func encodedEchoes(key string) []string {
	jsonOf := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	var pct strings.Builder
	for i := range len(key) {
		fmt.Fprintf(&pct, "%%%02x", key[i])
	}
	return []string{
		base64.StdEncoding.EncodeToString([]byte(key)),
		base64.RawURLEncoding.EncodeToString([]byte(key)),
		base64.StdEncoding.EncodeToString([]byte("Bearer " + key)),
		base64.URLEncoding.EncodeToString([]byte(`{"api_key":"` + key + `"}`)),
		base64.StdEncoding.EncodeToString([]byte("ab" + key + "c")),
		url.QueryEscape(key),
		pct.String(),
		jsonOf(key),
	}
}

// echoServerEncoded answers every request with an error (401 on
// /v1/models when models401 is set, else 400 and 500 on alternate chat
// requests) whose body echoes the Authorization header's key in every
// form of encodedEchoes. httptest binds it to 127.0.0.1.
func echoServerEncoded(t *testing.T, models401 bool) *httptest.Server {
	t.Helper()
	var n atomic.Int64 // the handler runs on one goroutine per connection
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		echo := "bad key: " + strings.Join(encodedEchoes(key), " | ")
		switch {
		case r.URL.Path == "/v1/models" && models401:
			http.Error(w, echo, http.StatusUnauthorized)
		case r.URL.Path == "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"echo-model","object":"model"}]}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader([]int{http.StatusBadRequest, http.StatusInternalServerError}[n.Add(1)%2])
			fmt.Fprintf(w, `{"error":{"message":"%s"}}`, echo) // echo is JSON-safe: its key form is escaped
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// b64Holds reports whether text holds key base64-encoded at any byte
// alignment, in either alphabet: each run of base64 characters decoded
// from each of its four character offsets.
func b64Holds(text, key string) bool {
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+/-_", c) >= 0
	}
	for i := 0; i < len(text); i++ {
		if !isB64(text[i]) || (i > 0 && isB64(text[i-1])) {
			continue
		}
		j := i
		for j < len(text) && isB64(text[j]) {
			j++
		}
		for off := 0; off < 4 && off < j-i; off++ {
			s := text[i+off : j]
			s = strings.NewReplacer("-", "+", "_", "/").Replace(s[:len(s)/4*4])
			if b, err := base64.StdEncoding.DecodeString(s); err == nil && bytes.Contains(b, []byte(key)) {
				return true
			}
		}
	}
	return false
}

// A server that echoes the API key base64-encoded, URL-encoded and
// JSON-escaped in its 4xx/5xx error bodies gets none of its forms into
// any file of the run directory (run.json's reason, requests.jsonl, the
// logs), stdout or stderr.
func TestEncodedKeyEchoRedacted(t *testing.T) {
	const key = "sk-EnCoDeD+k3y/v4lue=Zq9"
	for _, c := range []struct {
		name      string
		models401 bool
	}{{"models 401", true}, {"chat 400 and 500", false}} {
		t.Run(c.name, func(t *testing.T) {
			srv := echoServerEncoded(t, c.models401)
			out := filepath.Join(t.TempDir(), "run")
			stdout, stderr, code := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
				"--engine-url", srv.URL+"/v1", "--api-key", key, "--set", "request_count=2", "--set", "warmup_requests=0",
				"--set", "ready_timeout=1s", "--image-digest", testDigest)
			if c.models401 && code == exitOK {
				t.Fatalf("a server that refuses /v1/models: exit 0\n%s", stderr)
			}
			texts := outputs(t, stdout, stderr, out)
			if !c.models401 && !strings.Contains(texts["requests.jsonl"], "http 400") {
				t.Errorf("requests.jsonl does not record the failures:\n%s\nstderr:\n%s", texts["requests.jsonl"], stderr)
			}
			if !strings.Contains(stderr+texts["requests.jsonl"]+texts["run.json"], "[redacted]") {
				t.Errorf("no redaction mark anywhere (did the server's body reach the outputs?):\n%s", stderr)
			}
			if len(texts) < 4 {
				t.Errorf("only %d outputs read: %v", len(texts), texts)
			}
			for name, text := range texts {
				for _, s := range append(encodedEchoes(key), key) {
					if strings.Contains(text, s) {
						t.Errorf("%s shows %q:\n%s", name, s, text)
					}
				}
				if b64Holds(text, key) {
					t.Errorf("%s holds the key base64-encoded:\n%s", name, text)
				}
			}
		})
	}
}
