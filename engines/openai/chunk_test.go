package openai

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want chunkInfo
	}{
		{"role only", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`, chunkInfo{}},
		{"content", `{"choices":[{"index":0,"delta":{"content":"Hi there"},"finish_reason":null}]}`, chunkInfo{contentChars: 8}},
		{"escapes and unicode", `{"choices":[{"delta":{"content":"a\nb\"c\\d\u00e9\ud83d\ude00é😀"}}]}`, chunkInfo{contentChars: 11}}, // a ⏎ b " c \ d é 😀 é 😀
		{"lone surrogate", `{"choices":[{"delta":{"content":"\ud800x"}}]}`, chunkInfo{contentChars: 2}},
		{"completions text", `{"object":"text_completion","choices":[{"text":" world","index":0,"logprobs":null,"finish_reason":"length"}]}`, chunkInfo{contentChars: 6, finished: true}},
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}`, chunkInfo{reasoningChars: 3}},
		{"reasoning under both names", `{"choices":[{"delta":{"reasoning":"hmm?","reasoning_content":"hmm?"}}]}`, chunkInfo{reasoningChars: 4}},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":null}]}`, chunkInfo{finished: true}},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":10,"total_tokens":17,"completion_tokens":7,"prompt_tokens_details":null}}`, chunkInfo{hasUsage: true, usage: usage{10, 7, 0, [3]float64{}, 0}}},
		// vLLM/SGLang/llama.cpp: prompt tokens served from the prefix cache
		{"cached tokens", `{"choices":[],"usage":{"prompt_tokens":700,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":512}}}`, chunkInfo{hasUsage: true, usage: usage{700, 7, 0, [3]float64{}, 512}}},
		{"reasoning tokens", `{"usage":{"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":17,"accepted_prediction_tokens":0}}}`, chunkInfo{hasUsage: true, usage: usage{0, 20, 17, [3]float64{}, 0}}},
		{"float counts", `{"usage":{"completion_tokens":2.0e1}}`, chunkInfo{hasUsage: true, usage: usage{0, 20, 0, [3]float64{}, 0}}},
		{"fractional count: no count", `{"usage":{"prompt_tokens":4,"completion_tokens":3.7,"completion_tokens_details":{"reasoning_tokens":0.5}}}`, chunkInfo{hasUsage: true, usage: usage{4, 0, 0, [3]float64{0, 3.7, 0.5}, 0}}},
		{"message (non-streamed)", `{"choices":[{"message":{"role":"assistant","content":"ok","tool_calls":[{"id":"x","function":{"arguments":"{}"}}]},"finish_reason":"stop"}]}`, chunkInfo{contentChars: 2, finished: true}},
		{"two choices", `{"choices":[{"delta":{"content":"ab"}},{"delta":{"content":"cde"}}]}`, chunkInfo{contentChars: 5}},
		{"repeated member: last wins", `{"choices":[{"delta":{"content":"abc","content":"d"}}]}`, chunkInfo{contentChars: 1}},
		{"vllm error object", `{"object":"error","message":"The model ran out of memory","type":"BadRequestError","code":400}`, chunkInfo{errMsg: "The model ran out of memory"}},
		{"error member", `{"error":{"message":"overloaded","code":503}}`, chunkInfo{errMsg: "overloaded"}},
		{"error string", `{"error":"boom"}`, chunkInfo{errMsg: "boom"}},
		{"whitespace", " {\n \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] }\n", chunkInfo{contentChars: 1}},
		{"unknown nested", `{"x":{"y":[1,true,false,null,{"z":"\"}"}]},"choices":[{"delta":{"content":"q"}}]}`, chunkInfo{contentChars: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got chunkInfo
			if err := parseChunk([]byte(tt.in), &got); err != nil {
				t.Fatalf("error: %v", err)
			}
			if got.timings != nil || tt.want.timings != nil {
				t.Fatalf("unexpected timings %v", got.timings)
			}
			got.textHash = 0 // tested in chunktext_test.go
			if model := `"model":"m"`; strings.Contains(tt.in, model) && string(got.model) != "m" {
				t.Errorf("model %q, want m", got.model)
			}
			got.model = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseChunkRejects(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{"choices":[`, `{"choices":{}}`, `{"choices":[{"delta":{"content":5}}]}`,
		`{"choices":[{"text":"unterminated}]}`, `{"usage":{"completion_tokens":"7"}}`, `{"a":1} x`, `{"choices":[1]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"a\x01b\"}}]}",
	} {
		var got chunkInfo
		if err := parseChunk([]byte(in), &got); err == nil {
			t.Errorf("%q: no error (%+v)", in, got)
		}
	}
}

func TestParseChunkAllocs(t *testing.T) {
	chunk := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	var info chunkInfo
	if n := testing.AllocsPerRun(1000, func() { _ = parseChunk(chunk, &info) }); n != 0 {
		t.Fatalf("%v allocations per chunk, want 0", n)
	}
}

// reference computes what parseChunk must return with encoding/json, for
// the fields it decodes itself (not errors and timings, which parseChunk
// hands to encoding/json anyway). ok is false when a field parseChunk reads
// has a type it must reject.
func reference(in []byte) (info chunkInfo, ok bool) {
	var top map[string]any
	if json.Unmarshal(in, &top) != nil || top == nil {
		return info, false
	}
	str := func(v any) (int, bool) {
		switch v := v.(type) {
		case nil:
			return 0, true
		case string:
			return utf8.RuneCountInString(v), true
		}
		return 0, false
	}
	// num reads a count; a fraction is no count: 0, noted in *frac.
	num := func(v any, frac *float64) (int, bool) {
		switch v := v.(type) {
		case nil:
			return 0, true
		case float64:
			if v != math.Trunc(v) {
				*frac = v
				return 0, true
			}
			return int(v), math.Abs(v) < 1e15
		}
		return 0, false
	}
	delta := func(v any) (c, r int, ok bool) {
		if v == nil {
			return 0, 0, true
		}
		m, isObj := v.(map[string]any)
		if !isObj {
			return 0, 0, false
		}
		c, ok1 := str(m["content"])
		rc, ok2 := str(m["reasoning_content"])
		rr, ok3 := str(m["reasoning"])
		return c, max(rc, rr), ok1 && ok2 && ok3
	}
	if ch, present := top["choices"]; present && ch != nil {
		arr, isArr := ch.([]any)
		if !isArr {
			return info, false
		}
		for _, e := range arr {
			if e == nil {
				continue
			}
			m, isObj := e.(map[string]any)
			if !isObj {
				return info, false
			}
			text, ok1 := str(m["text"])
			dc, dr, ok2 := delta(m["delta"])
			mc, mr, ok3 := delta(m["message"])
			if !ok1 || !ok2 || !ok3 {
				return info, false
			}
			info.contentChars += text + dc + mc
			info.reasoningChars += dr + mr
			if fr, present := m["finish_reason"]; present && fr != nil {
				info.finished = true
			}
		}
	}
	if u, present := top["usage"]; present && u != nil {
		m, isObj := u.(map[string]any)
		if !isObj {
			return info, false
		}
		info.hasUsage = true
		var ok1, ok2, ok3 bool
		info.usage.promptTokens, ok1 = num(m["prompt_tokens"], &info.usage.frac[0])
		info.usage.completionTokens, ok2 = num(m["completion_tokens"], &info.usage.frac[1])
		ok3 = true
		if d, present := m["completion_tokens_details"]; present && d != nil {
			dm, isObj := d.(map[string]any)
			if !isObj {
				return info, false
			}
			info.usage.reasoningTokens, ok3 = num(dm["reasoning_tokens"], &info.usage.frac[2])
		}
		if !ok1 || !ok2 || !ok3 {
			return info, false
		}
	}
	return info, true
}

// chunkSeeds are the seed corpus of the chunk fuzz tests.
var chunkSeeds = []string{
	`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
	`{"choices":[{"text":"x\u00e9\ud83d\ude00","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
	`{"choices":[{"delta":{"reasoning_content":"a","reasoning":"bb"}}],"usage":{"completion_tokens_details":{"reasoning_tokens":3}}}`,
	`{"choices":[null,{"message":{"content":null}}],"usage":null,"x":[{},[],"\\"]}`,
	`{"choices":[{"delta":{"content":"a","content":"bcd"}}],"choices":[{"text":"z"}]}`,
	`{"usage":{"completion_tokens":-3.5e0}}`,
}

func FuzzParseChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got chunkInfo
		err := parseChunk(in, &got) // must not panic, whatever the input
		if !json.Valid(in) {
			return
		}
		want, ok := reference(in)
		if !ok {
			return // a wrongly typed field: TestParseChunkRejects
		}
		if err != nil {
			t.Fatalf("%q: error %v on valid input (want %+v)", in, err, want)
		}
		got.errMsg, got.timings, got.textHash, got.model = "", nil, 0, nil // textHash: chunktext_test.go
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func TestJSONStringChars(t *testing.T) {
	for _, s := range []string{"", "plain", "é😀中", "a\nb\t\"q\"\\", "\u2028", string([]byte{0xff, 'a', 0xc3})} {
		raw, _ := json.Marshal(s)
		var dec string
		json.Unmarshal(raw, &dec)
		if got, want := jsonStringChars(raw[1:len(raw)-1]), utf8.RuneCountInString(dec); got != want {
			t.Errorf("%q: %d chars, want %d", s, got, want)
		}
	}
}

// FuzzParseChunkMemo: a chunk parsed after another, with the memo of the
// first, gives what it gives on its own, error included.
func FuzzParseChunkMemo(f *testing.F) {
	vllm := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`
	f.Add([]byte(vllm), []byte(strings.Replace(vllm, `"a"`, `"bc"`, 1)))
	f.Add([]byte(vllm), []byte(strings.Replace(vllm, `"choices"`, `"usage":{"completion_tokens":2},"choices"`, 1)))
	f.Add([]byte(`{"object":"error","choices":[]}`), []byte(`{"object":"error","message":"boom"}`))
	f.Add([]byte(`{"object":"error","id":"x","choices":[]}`), []byte(`{"object":"error","id":"x","choices":[]`))
	f.Add([]byte(vllm), []byte(vllm[:40]))
	for _, s := range chunkSeeds {
		f.Add([]byte(vllm), []byte(s))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var memo chunkMemo
		var got, want chunkInfo
		_ = parseChunkMemo(first, &got, &memo)
		gotErr := parseChunkMemo(second, &got, &memo)
		wantErr := parseChunk(second, &want)
		// The model is read only when the start differs from the
		// remembered one (the same bytes name the same model).
		if got.model != nil && string(got.model) != string(want.model) {
			t.Fatalf("%q after %q: model %q, want %q", second, first, got.model, want.model)
		}
		got.model, want.model = nil, nil
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q after %q:\n got %+v (%v)\nwant %+v (%v)", second, first, got, gotErr, want, wantErr)
		}
	})
}

// TestParseChunkMemoSkipsTheSameStart: the second chunk of a stream starts
// where the first's prefix ends, and what the prefix said is kept.
func TestParseChunkMemoSkipsTheSameStart(t *testing.T) {
	var memo chunkMemo
	var info chunkInfo
	first := `{"id":"chatcmpl-1","object":"error","created":1,"message":"x","choices":[]}`
	if err := parseChunkMemo([]byte(first), &info, &memo); err != nil || info.errMsg != "x" {
		t.Fatalf("first: %v %+v", err, info)
	}
	if want := `{"id":"chatcmpl-1","object":"error","created":1,`; string(memo.prefix) != want || !memo.isErrorObject {
		t.Fatalf("memo %q (error object %v), want %q (true)", memo.prefix, memo.isErrorObject, want)
	}
	// Same start, no message member: the error object is still one.
	if err := parseChunkMemo([]byte(`{"id":"chatcmpl-1","object":"error","created":1,"choices":[]}`), &info, &memo); err != nil || info.errMsg != "error" {
		t.Fatalf("second: %v %+v", err, info)
	}
	// A chunk that does not parse leaves no memo.
	_ = parseChunkMemo([]byte(`{"id":"chatcmpl-1","choices":[`), &info, &memo)
	if len(memo.prefix) != 0 {
		t.Fatalf("memo %q kept from a bad chunk", memo.prefix)
	}
}

// TestParseChunkMemoShape: after a vLLM token chunk, the next ones are read
// from its shape (only the content string differs), and count what they
// say; a chunk of another shape is parsed in full.
func TestParseChunkMemoShape(t *testing.T) {
	tok := func(s string) []byte {
		return []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` + s + `},"logprobs":null,"finish_reason":null}]}`)
	}
	var memo chunkMemo
	var info chunkInfo
	if err := parseChunkMemo(tok(`"a"`), &info, &memo); err != nil || len(memo.shape) == 0 {
		t.Fatalf("first chunk: %v, shape %q", err, memo.shape)
	}
	for _, tc := range []struct {
		content string
		chars   int // characters of the decoded string
	}{
		{`" tok"`, 4},
		{`"\"},\"x\":\""`, 8}, // `"},"x":"` escaped (8 characters): still one string
		{`"\u00e9\ud83d\ude00"`, 2},
		{`""`, 0},
	} {
		var want chunkInfo
		if err := parseChunk(tok(tc.content), &want); err != nil {
			t.Fatal(err)
		}
		want.model = nil // the shape's, checked with the first chunk
		shaped := memo.sameShape(tok(tc.content), &info)
		if !shaped || !reflect.DeepEqual(info, want) || info.contentChars != tc.chars {
			t.Errorf("%s: from the shape %v, %+v; want %+v (%d chars)", tc.content, shaped, info, want, tc.chars)
		}
	}
	// Not a string in the content's place, or other members: no shape.
	for _, other := range [][]byte{tok(`null`), tok(`"a","reasoning":"b"`), []byte(`{"choices":[]}`)} {
		if memo.sameShape(other, &info) {
			t.Errorf("%s read from the shape", other)
		}
	}
}

func TestPlainString(t *testing.T) {
	tests := []struct {
		tok   string
		chars int
		ok    bool
	}{
		{`" tok"`, 4, true},
		{`""`, 0, true},
		{`"a\"b"`, 0, false}, // an escape: left to the scanner
		{`"é"`, 0, false},    // not ASCII
		{"\"a\tb\"", 0, false},
		{`"a"b"`, 0, false},
		{` "a"`, 0, false},
		{`"a`, 0, false},
		{`"`, 0, false},
	}
	for _, tc := range tests {
		if chars, ok := plainString([]byte(tc.tok)); chars != tc.chars || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.tok, chars, ok, tc.chars, tc.ok)
		}
	}
}
