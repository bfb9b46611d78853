package openai

import (
	"net/http"
	"strings"
	"testing"
)

// A reasoning model's first answer chunk is recorded apart from its first
// (reasoning) chunk; the answer text, not the reasoning, is handed to a
// request that asks for it; cached prompt tokens come from usage, else
// from llama.cpp's timings.cache_n.
func TestReasoningAnswerAndCachedTokens(t *testing.T) {
	for _, c := range []struct {
		name, tail string
		cached     int
	}{
		{"usage", `{"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":768}}}`, 768},
		{"llama.cpp timings", `{"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":5},"timings":{"cache_n":850,"prompt_n":50}}`, 850},
		{"none", `{"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":5}}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				send(w, roleChunk,
					`{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think."},"finish_reason":null}]}`,
					`{"choices":[{"index":0,"delta":{"reasoning_content":" Ok."},"finish_reason":null}]}`,
					content("The answer"), content(" is \"42\"."), finishChunk, c.tail, "[DONE]")
			})
			var answer strings.Builder
			rec := do(t, srv.URL, Request{Chat: true, Answer: &answer})
			if !rec.OK || len(rec.TokenTimes) != 4 {
				t.Fatalf("%+v", rec)
			}
			if rec.FirstTokenAt != rec.TokenTimes[0] || rec.FirstAnswerAt != rec.TokenTimes[2] {
				t.Errorf("first token %v, first answer %v; want token times 0 and 2 of %v", rec.FirstTokenAt, rec.FirstAnswerAt, rec.TokenTimes)
			}
			if answer.String() != `The answer is "42".` {
				t.Errorf("answer %q", answer.String())
			}
			if rec.CachedPromptTokens != c.cached {
				t.Errorf("cached prompt tokens %d, want %d", rec.CachedPromptTokens, c.cached)
			}
		})
	}
	// Without reasoning there is no separate first answer.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("a"), content("b"), finishChunk, "[DONE]")
	})
	if rec := do(t, srv.URL, Request{Chat: true}); !rec.OK || rec.FirstAnswerAt != 0 {
		t.Errorf("%+v", rec)
	}
}
