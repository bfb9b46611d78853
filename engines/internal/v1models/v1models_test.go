package v1models

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/process"
)

func TestList(t *testing.T) {
	cases := []struct {
		name, body, want string
		id               string
		maxLen           int
		err              string
	}{
		{"wanted", `{"data":[{"id":"a"},{"id":"b","max_model_len":4096}]}`, "b", "b", 4096, ""},
		{"absent: the first", `{"data":[{"id":"a","max_model_len":512},{"id":"b"}]}`, "c", "a", 512, ""},
		{"none wanted: the first", `{"data":[{"id":"a"}]}`, "", "a", 0, ""},
		{"Ollama's implicit tag", `{"data":[{"id":"other:latest"},{"id":"tiny:latest"}]}`, "tiny", "tiny:latest", 0, ""},
		{"a tag asked for is not another tag", `{"data":[{"id":"other:latest"},{"id":"tiny:q4"}]}`, "tiny:q8", "other:latest", 0, ""},
		{"empty list", `{"data":[]}`, "a", "", 0, "lists no model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/models" {
					http.NotFound(w, r)
					return
				}
				_, _ = io.WriteString(w, c.body)
			}))
			defer ts.Close()
			m, raw, err := List(context.Background(), process.NewServer(process.Spec{Name: "t"}, ts.URL, "/health"), c.want)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || m.ID != c.id || m.MaxModelLen != c.maxLen || raw == nil {
				t.Errorf("got %+v %v %v, want id %s max_model_len %d", m, raw, err, c.id, c.maxLen)
			}
		})
	}
}
