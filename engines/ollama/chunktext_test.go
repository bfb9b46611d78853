package ollama_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/workload"
)

// The native client records the distinct chunk texts: one token repeated
// over 10 lines gives 1, ten different tokens 10.
func TestDistinctChunks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		token func(i int) string
		want  int
	}{
		{"one token repeated", func(int) string { return " the" }, 1},
		{"varied", func(i int) string { return fmt.Sprintf(" w%d", i) }, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				for i := 0; i < 10; i++ {
					fmt.Fprintf(w, `{"message":{"role":"assistant","content":%q},"done":false}`+"\n", tt.token(i))
				}
				fmt.Fprintln(w, `{"message":{"role":"assistant","content":""},"done":true,"eval_count":10}`)
			}))
			defer ts.Close()
			rec := ollama.NewClient(ts.URL).Do(context.Background(), workload.Request{ID: "r", Model: "tiny", Chat: true, Prompt: "x"})
			if !rec.OK || rec.DistinctChunks != tt.want {
				t.Fatalf("ok %v distinct_chunks %d, want %d (%+v)", rec.OK, rec.DistinctChunks, tt.want, rec)
			}
		})
	}
}
