package tokenize

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Each server's /tokenize answer, as its source defines it, gives the
// count; a server without the endpoint or with an answer missing the
// count is an error that names the request.
func TestCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		answer string
		llama  bool // ask as llama.cpp (else as vLLM/SGLang)
		want   int
		err    string
	}{
		{"llama.cpp", 200, `{"tokens":[1,15,16,17]}`, true, 4, ""},
		{"vLLM", 200, `{"count":3,"max_model_len":4096,"tokens":[1,2,3],"token_strs":null}`, false, 3, ""},
		{"SGLang tokens only", 200, `{"tokens":[5,6]}`, false, 2, ""},
		{"count wins over tokens", 200, `{"count":7,"tokens":[5,6]}`, false, 7, ""},
		{"no endpoint", 404, `{"detail":"Not Found"}`, false, 0, "404"},
		{"llama.cpp no tokens", 200, `{}`, true, 0, "the answer has no tokens"},
		{"vLLM no count", 200, `{"max_model_len":4096}`, false, 0, "neither count nor tokens"},
		{"not JSON", 200, `<html>`, true, 0, "tokenize: POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/tokenize" {
					http.NotFound(w, r)
					return
				}
				_ = json.NewDecoder(r.Body).Decode(&got)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			var n int
			var err error
			if tc.llama {
				n, err = LlamaCpp(context.Background(), srv.Client(), srv.URL, "hello world")
			} else {
				n, err = OpenAIServer(context.Background(), srv.Client(), srv.URL+"/", "m", "hello world")
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("count %d, %v; want %d", n, err, tc.want)
			}
			if tc.llama && (got["content"] != "hello world" || got["add_special"] != true) {
				t.Errorf("llama.cpp request %v", got)
			}
			if !tc.llama && (got["prompt"] != "hello world" || got["model"] != "m") {
				t.Errorf("vLLM/SGLang request %v", got)
			}
		})
	}
}
