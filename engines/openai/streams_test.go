package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// modelChunk is a token chunk that names its model, as vLLM's do.
func modelChunk(model, text string) string {
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"` + model + `","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}`
}

// TestStreamCases: servers whose stream contradicts itself, names another
// model, splits an event over data lines (valid SSE) or is cut mid-event.
// Each row: what the server writes (raw SSE), and the record's error
// prefix ("" = ok) with its output tokens and characters.
func TestStreamCases(t *testing.T) {
	ev := func(data ...string) string { // one event, one data line each
		var b strings.Builder
		for _, d := range data {
			b.WriteString("data: " + d + "\n")
		}
		return b.String() + "\n"
	}
	done := ev(finishChunk) + ev("[DONE]")
	pretty := "{\n  \"choices\": [\n    {\"index\": 0, \"delta\": {\"content\": \"ab\\ncd\"}}\n  ]\n}" // one chunk over 5 lines: "ab⏎cd", 5 characters
	for _, tc := range []struct {
		name, body string
		model      string // requested
		want       string // error prefix; "" = ok
		tokens     int
		chars      int
	}{
		{"usage 0 with text", ev(content("abcd")) + ev(usageChunk(3, 0)) + done, "",
			"implausible token count from the server: output tokens 0 (usage) but the stream carried 4 characters of text", 0, 4},
		{"usage 3.7", ev(content("abcd")) + ev(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3.7}}`) + done, "",
			"implausible token count from the server: usage completion_tokens 3.7 is not a whole number", 0, 4},
		{"usage 2.0 is 2", ev(content("abcd")) + ev(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2.0}}`) + done, "", "", 2, 4},
		{"the model requested", ev(modelChunk("m", "ab")) + ev(modelChunk("m", "cd")) + done, "m", "", 1, 4},
		{"Ollama's default tag", ev(modelChunk("m:latest", "ab")) + done, "m", "", 1, 2},
		{"another model", ev(modelChunk("m", "ab")) + ev(modelChunk("other", "cd")) + done, "m",
			`the server answered with model "other", not the model requested, "m"`, 0, 2},
		{"another model from the start", ev(modelChunk("other", "ab")) + done, "m",
			`the server answered with model "other", not the model requested, "m"`, 0, 0},
		{"no model requested: not checked", ev(modelChunk("other", "ab")) + done, "", "", 1, 2},
		{"one event over two data lines", ev(`{"choices":[{"index":0,`, `"delta":{"content":"abc"}}]}`) + done, "", "", 1, 3},
		{"pretty-printed chunk", ev(strings.Split(pretty, "\n")...) + done, "", "", 1, 5},
		{"split event then a token event", ev(`{"choices":`, `[{"delta":{"content":"ab"}}]}`) + ev(content("cde")) + done, "", "", 1, 5},
		{"event that never parses", ev(content("ab")) + ev(`{"choices":[{"delta":`, `{"content":}}]}`) + done, "",
			"invalid chunk at byte", 0, 2},
		{"ends inside an event", ev(content("ab")) + `data: {"choices":[{"delta":{"content":"c`, "",
			"the stream ended inside an event: invalid chunk", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				streamHeaders(w)
				io.WriteString(w, tc.body)
			})
			rec := do(t, srv.URL, Request{Chat: true, Model: tc.model, MaxTokens: 16})
			if tc.want == "" {
				if !rec.OK || rec.OutputTokens != tc.tokens || rec.OutputChars != tc.chars {
					t.Fatalf("ok %v %q, %d tokens, %d chars; want ok, %d tokens, %d chars", rec.OK, rec.Error, rec.OutputTokens, rec.OutputChars, tc.tokens, tc.chars)
				}
				return
			}
			if rec.OK || !strings.HasPrefix(rec.Error, tc.want) || rec.OutputTokens != 0 || rec.OutputChars != tc.chars {
				t.Fatalf("ok %v %q, %d tokens, %d chars; want %q, 0 tokens, %d chars", rec.OK, rec.Error, rec.OutputTokens, rec.OutputChars, tc.want, tc.chars)
			}
		})
	}
}

// TestTimeoutMidEvent: a request cut by its timeout while an event is
// half written is recorded as the timeout, not as an invalid chunk.
func TestTimeoutMidEvent(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		send(w, content("ab"))
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"unterminat`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	rec := do(t, srv.URL, Request{Chat: true}, WithRequestTimeout(200*time.Millisecond))
	if rec.OK || rec.Error != "request timeout after 200ms" || rec.OutputChars != 2 {
		t.Fatalf("ok %v %q, %d chars; want the timeout, 2 chars", rec.OK, rec.Error, rec.OutputChars)
	}
}

// FuzzReadSSEDataLines: a chunk written over several data lines of one
// event, one line of the chunk each (SSE joins an event's data lines with
// "\n"), reads as encoding/json reads the chunk (reference): its
// characters, text chunk and usage, then the next token event and [DONE].
// A chunk some first lines of which are a whole JSON document already,
// followed by more than white space, is read as two events (servers that
// leave out the blank line between events are read as before), where SSE
// would have one invalid event: such input is not compared.
func FuzzReadSSEDataLines(f *testing.F) {
	for _, s := range chunkSeeds {
		var b bytes.Buffer
		if json.Indent(&b, []byte(s), "", "  ") == nil {
			f.Add(b.Bytes())
		}
		f.Add([]byte(s))
	}
	f.Add([]byte("{\n\"choices\"\n:\n[{\"delta\":{\"content\":\"a\"}}\n]\n\n}"))
	f.Add([]byte("{\"choices\":[{\"delta\":{\"content\":\"a\nb\"}}]}")) // a raw newline in a string: invalid
	f.Fuzz(func(t *testing.T, doc []byte) {
		if bytes.IndexByte(doc, '\r') >= 0 {
			return // a line break of its own in SSE
		}
		lines := bytes.Split(doc, []byte("\n"))
		var stream bytes.Buffer
		for _, l := range lines {
			stream.WriteString("data: ")
			stream.Write(l)
			stream.WriteByte('\n')
		}
		stream.WriteString("\n" + vllmEvent(`"z"`) + "data: [DONE]\n\n")
		got := readSSESummary(bytes.NewReader(stream.Bytes())) // must not panic, whatever the input
		if !json.Valid(doc) {
			return
		}
		for k := 1; k < len(lines); k++ {
			if json.Valid(bytes.Join(lines[:k], []byte("\n"))) && len(bytes.TrimSpace(bytes.Join(lines[k:], nil))) > 0 {
				return
			}
		}
		want, ok := reference(doc)
		var alone chunkInfo
		if !ok || parseChunk(doc, &alone) != nil || alone.errMsg != "" {
			return // wrongly typed, or an error the server sent: FuzzParseChunk, TestStreamCases
		}
		text := 0
		if want.contentChars+want.reasoningChars > 0 {
			text = 1
		}
		if got.ErrMsg != "" || !got.Done || got.Chars != want.contentChars+want.reasoningChars+1 || got.Tokens != text+1 ||
			got.HasUsage != want.hasUsage || got.Usage != want.usage {
			t.Fatalf("%q:\n got %+v\nwant %+v (and one more token event)", doc, got, want)
		}
	})
}
