package openai

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/joulebench/joulebench/workload"
)

// mapBody is the body as a map, marshalled by encoding/json: what
// appendBody must write, byte for byte.
func mapBody(r workload.Request) ([]byte, error) {
	body := make(map[string]any, 8+len(r.Extra))
	p := workload.Prompt{Prompt: r.Prompt, Messages: r.Messages}
	if r.Chat {
		body["messages"] = p.ChatMessages()
	} else {
		body["prompt"] = p.CompletionText()
	}
	if r.Model != "" {
		body["model"] = r.Model
	}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	body["temperature"] = r.Temperature
	if r.IgnoreEOS {
		body["ignore_eos"] = true
	}
	body["stream_options"] = map[string]any{"include_usage": true}
	for k, v := range r.Extra {
		body[k] = v
	}
	body["stream"] = true
	return json.Marshal(body)
}

func TestAppendBodyIsTheMapsJSON(t *testing.T) {
	tests := []workload.Request{
		{Chat: true, Prompt: "Hello"},
		{Prompt: "Hello", Model: "m", MaxTokens: 256, Temperature: 0.7, IgnoreEOS: true},
		{Chat: true, Messages: []workload.Message{{Role: "system", Content: "be <brief> & \"exact\"\n"}, {Role: "user", Content: "q\t\x01\x7f"}}},
		{Messages: []workload.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}},
		{Chat: true, Prompt: "bad \xff utf-8 \u2028 \u2029 é 漢 🙂"},
		{Prompt: "p", Temperature: 1e-7},
		{Prompt: "p", Temperature: 1e21},
		{Prompt: "p", Temperature: -2.5e-10},
		{Prompt: "p", Temperature: 123456789.125},
		// Extra members sort among the body's own, replace them, and
		// never replace "stream".
		{Chat: true, Prompt: "p", MaxTokens: 8, Extra: map[string]any{"bench_id": 0}},
		{Chat: true, Prompt: "p", MaxTokens: 8, Extra: map[string]any{"temperature": "x", "max_tokens": nil, "stream": false, "top_p": 0.9, "a<b": []int{1}, "zz": map[string]any{"k": "<"}}},
		{Prompt: "p", Model: "m", Extra: map[string]any{"model": "other", "prompt": 3, "ignore_eos": false, "stream_options": nil}},
	}
	for i, r := range tests {
		want, err := mapBody(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendBody(nil, r)
		if err != nil || string(got) != string(want) {
			t.Errorf("%d: got %s (%v)\nwant %s", i, got, err, want)
		}
	}
}

func TestAppendBodyRejectsWhatJSONRejects(t *testing.T) {
	for _, r := range []workload.Request{
		{Prompt: "p", Temperature: math.NaN()},
		{Prompt: "p", Temperature: math.Inf(1)},
		{Prompt: "p", Extra: map[string]any{"f": func() {}}},
	} {
		if _, err := mapBody(r); err == nil {
			t.Fatalf("the reference accepts %+v", r)
		}
		if b, err := appendBody(nil, r); err == nil {
			t.Errorf("%+v: encoded %s, want an error", r, b)
		}
	}
}

func FuzzAppendBody(f *testing.F) {
	f.Add(true, "Hello", "", "m", 256, 0.7, false, "bench_id", "x")
	f.Add(false, "a<b>&c\x00\xff\u2028", "sys", "", 0, 1e-9, true, "temperature", "hot")
	f.Fuzz(func(t *testing.T, chat bool, prompt, system, model string, maxTokens int, temp float64, ignoreEOS bool, extraKey, extraVal string) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) {
			return
		}
		r := workload.Request{Chat: chat, Prompt: prompt, Model: model, MaxTokens: maxTokens, Temperature: temp, IgnoreEOS: ignoreEOS}
		if system != "" {
			r.Messages = []workload.Message{{Role: "system", Content: system}, {Role: "user", Content: prompt}}
		}
		if extraKey != "" {
			r.Extra = map[string]any{extraKey: extraVal}
		}
		want, err := mapBody(r)
		if err != nil {
			t.Skip()
		}
		got, err := appendBody(nil, r)
		if err != nil || string(got) != string(want) {
			t.Fatalf("got %s (%v)\nwant %s", got, err, want)
		}
	})
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream":                true,
		"text/event-stream; charset=utf-8": true,
		"application/json":                 false,
		"application/json; charset=utf-8":  false,
		"Application/JSON":                 false,
		"":                                 true,
		"text/plain":                       true,
	} {
		if got := !isJSON(ct); got != want {
			t.Errorf("%q: stream %v, want %v", ct, got, want)
		}
	}
}
