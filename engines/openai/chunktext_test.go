package openai

import (
	"net/http"
	"strings"
	"testing"
)

// Equal texts hash equal whatever the chunk's other members; different
// texts differ.
func TestChunkTextHash(t *testing.T) {
	hash := func(s string) uint64 {
		var c chunkInfo
		if err := parseChunk([]byte(s), &c); err != nil {
			t.Fatal(err)
		}
		return c.textHash
	}
	a := hash(`{"id":"1","created":1,"choices":[{"index":0,"delta":{"content":" the"}}]}`)
	b := hash(`{"id":"1","created":2,"choices":[{"index":0,"delta":{"content":" the"}}]}`)
	c := hash(`{"id":"1","created":2,"choices":[{"index":0,"delta":{"content":" fox"}}]}`)
	if a != b || a == c {
		t.Errorf("hash(the)=%x hash(the, other member)=%x hash(fox)=%x", a, b, c)
	}
}

// The client records the distinct chunk texts: one token repeated gives 1;
// varied text gives the number of different chunks; fewer than 8 content
// chunks record nothing.
func TestDistinctChunks(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   int
	}{
		{"one token repeated", strings.Split("a a a a a a a a a a", " "), 1},
		{"varied", strings.Split("Once upon a time there was a fox", " "), 7}, // 8 chunks, "a" twice
		{"too short", []string{"x", "y", "x"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				events := []string{roleChunk}
				for _, c := range tt.chunks {
					events = append(events, content(c))
				}
				send(w, append(events, finishChunk, "[DONE]")...)
			})
			rec := do(t, srv.URL, Request{Chat: true, Prompt: "x"})
			if !rec.OK || rec.DistinctChunks != tt.want {
				t.Fatalf("ok %v distinct_chunks %d, want %d", rec.OK, rec.DistinctChunks, tt.want)
			}
		})
	}
}
