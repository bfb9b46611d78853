package openai

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
)

// sseSummary is what reading a stream leaves that the record is made of.
type sseSummary struct {
	Chars, Distinct, Tokens     int
	Done, Finish, HasUsage, EOF bool
	Usage                       usage
	ErrMsg                      string
	Timings                     map[string]float64
}

func readSSESummary(r io.Reader) sseSummary {
	c := NewClient("http://127.0.0.1:1", WithClock(func() float64 { return 1 }))
	rec := record.Request{}
	st := stream{c: c, x: &streamcore.Exchange{}, rec: &rec}
	st.readSSE(r)
	return sseSummary{Chars: st.chars, Distinct: st.texts.Distinct(), Tokens: len(rec.TokenTimes),
		Done: st.sawDone, Finish: st.sawFinish, HasUsage: st.hasUsage, EOF: st.eof,
		Usage: st.usage, ErrMsg: st.errMsg, Timings: st.timings}
}

func vllmEvent(content string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` + content + `},"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

// FuzzReadSSEInPlace: a stream read with its events in the buffer (token
// events of the remembered shape matched in place, see matchEvent) says
// what it says read one byte at a time (every line found by its newline
// and parsed).
func FuzzReadSSEInPlace(f *testing.F) {
	var vllm strings.Builder
	for _, s := range []string{`"Hel"`, `"lo"`, `" wor"`, `"ld"`, `"\n"`, `"é"`, `"a\"b"`, `""`, `" x"`} {
		vllm.WriteString(vllmEvent(s))
	}
	vllm.WriteString("data: " + finishChunk + "\n\ndata: " + usageChunk(3, 9) + "\n\ndata: [DONE]\n\n")
	f.Add([]byte(vllm.String()))
	f.Add([]byte(strings.ReplaceAll(vllm.String(), "\n\n", "\r\n\r\n")))
	f.Add([]byte(strings.ReplaceAll(vllm.String(), "data: ", "data:")))
	f.Add([]byte(vllmEvent(`"a"`) + vllmEvent(`"b"`) + ": comment\n" + vllmEvent(`"c"`) + "data: " + vllmEvent(`"d"`)[6:] + vllmEvent(`"e`)))
	f.Add([]byte(vllmEvent(`"a"`) + strings.TrimSuffix(vllmEvent(`"b"`), "\n\n") + "\ndata: [DONE]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := readSSESummary(bytes.NewReader(data))
		want := readSSESummary(iotest.OneByteReader(bytes.NewReader(data)))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nin place %+v\none byte at a time %+v", data, got, want)
		}
	})
}

// TestMatchEvent: the event's extent, and what it says, for a token event
// of the remembered shape; anything else is not matched.
func TestMatchEvent(t *testing.T) {
	var memo chunkMemo
	var info chunkInfo
	first := vllmEvent(`"a"`)
	if err := parseChunkMemo([]byte(strings.TrimSpace(first[6:])), &info, &memo); err != nil {
		t.Fatal(err)
	}
	next := vllmEvent(`" tok"`)
	var want chunkInfo
	if err := parseChunk([]byte(strings.TrimSpace(next[6:])), &want); err != nil {
		t.Fatal(err)
	}
	want.model = nil // the shape's, checked with the first chunk
	tests := []struct {
		name string
		buf  string
		n    int
	}{
		{"event and blank line", next + "data: more", len(next)},
		{"blank line not here yet", strings.TrimSuffix(next, "\n"), len(next) - 1},
		{"line not complete", strings.TrimSuffix(next, "\n\n"), 0},
		{"crlf", strings.ReplaceAll(next, "\n", "\r\n"), 0},
		{"escape", vllmEvent(`"a\"b"`), 0},
		{"not ascii", vllmEvent(`"é"`), 0},
		{"no space after data:", "data:" + next[6:], 0},
		{"other shape", "data: [DONE]\n\n", 0},
	}
	for _, tc := range tests {
		got := chunkInfo{contentChars: -1}
		n := memo.matchEvent([]byte(tc.buf), &got)
		if n != tc.n {
			t.Errorf("%s: %d bytes, want %d", tc.name, n, tc.n)
		}
		if n > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, want)
		}
	}
}
