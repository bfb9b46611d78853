package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestWithExtra: the client's extra members reach every body, prepared
// (Prepare) or not, and a request's own Extra wins over them.
func TestWithExtra(t *testing.T) {
	bodies := make(chan map[string]any, 4)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		bodies <- m
		streamHeaders(w)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	c := NewClient(srv.URL, WithExtra(map[string]any{"top_k": 5.0, "seed": 1.0}))
	own := Request{ID: "a", Chat: true, Prompt: "p", Extra: map[string]any{"seed": 9.0}}
	prepared := Request{ID: "b", Phase: "formal", Chat: true, Prompt: "p"}
	release := c.Prepare(context.Background(), []Request{prepared})
	defer release()
	for _, tc := range []struct {
		name       string
		r          Request
		topK, seed float64
	}{
		{"own extra wins", own, 5, 9},
		{"prepared body", prepared, 5, 1},
	} {
		if rec := c.Do(context.Background(), tc.r); !rec.OK {
			t.Fatalf("%s: %s", tc.name, rec.Error)
		}
		b := <-bodies
		if b["top_k"] != tc.topK || b["seed"] != tc.seed {
			t.Errorf("%s: body %v, want top_k %v and seed %v", tc.name, b, tc.topK, tc.seed)
		}
	}
	if own.Extra["top_k"] != nil {
		t.Errorf("the request's own Extra was changed: %v", own.Extra)
	}
}
