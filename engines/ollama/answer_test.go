package ollama_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/workload"
)

// After thinking, the first answer line's time is first_answer_at, and the
// answer text (not the thinking) goes to a request that asks for it.
func TestThinkingThenAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":"","thinking":" ok"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":"Hi"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":" there"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":4,"eval_duration":1000}`+"\n")
	}))
	defer ts.Close()
	var answer strings.Builder
	rec := ollama.NewClient(ts.URL).Do(context.Background(), workload.Request{ID: "t", Model: "m", Chat: true, Prompt: "x", Answer: &answer})
	if !rec.OK || len(rec.TokenTimes) != 4 || rec.FirstAnswerAt != rec.TokenTimes[2] || rec.FirstTokenAt != rec.TokenTimes[0] {
		t.Errorf("record %+v", rec)
	}
	if answer.String() != "Hi there" {
		t.Errorf("answer %q", answer.String())
	}
	// No thinking: no separate first answer.
	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":"Hi"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":1,"eval_duration":1000}`+"\n")
	}))
	defer ts2.Close()
	if rec := ollama.NewClient(ts2.URL).Do(context.Background(), workload.Request{ID: "t", Model: "m", Chat: true, Prompt: "x"}); !rec.OK || rec.FirstAnswerAt != 0 {
		t.Errorf("record %+v", rec)
	}
}
