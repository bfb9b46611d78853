package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"unicode"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/goccy/go-json/jsontext"
)

// libChunk is parseChunk written with github.com/goccy/go-json instead of
// the scanner, kept to measure the choice (BenchmarkParseChunk) and
// checked against encoding/json by FuzzLibChunk. Every string is held as a RawMessage whose
// buffer is reused from chunk to chunk (no allocation) and unquoted into
// a scratch buffer to count its characters. The objects that may hold
// strings (choices, delta, message) are decoded from a RawMessage in a
// second and third pass, so that a repeated member replaces the earlier
// one as encoding/json's map decoding (and parseChunk) does; decoded
// straight into nested structs, encoding/json's rules would merge them.
// One difference stays: member names match in any letter case.
type libChunk struct {
	top struct {
		Choices gojson.RawMessage `json:"choices"`
		Usage   gojson.RawMessage `json:"usage"`
	}
	choices []struct {
		Text         gojson.RawMessage `json:"text"`
		Delta        gojson.RawMessage `json:"delta"`
		Message      gojson.RawMessage `json:"message"`
		FinishReason gojson.RawMessage `json:"finish_reason"`
	}
	delta struct {
		Content          gojson.RawMessage `json:"content"`
		ReasoningContent gojson.RawMessage `json:"reasoning_content"`
		Reasoning        gojson.RawMessage `json:"reasoning"`
	}
	scratch []byte
}

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

func (p *libChunk) chars(raw gojson.RawMessage) (int, error) {
	if isNull(raw) {
		return 0, nil
	}
	if raw[0] != '"' {
		return 0, errors.New("want a string")
	}
	var err error
	p.scratch, err = jsontext.AppendUnquote(p.scratch[:0], raw)
	if err != nil {
		// jsontext rejects invalid UTF-8, which encoding/json's rules
		// replace with U+FFFD.
		var s string
		err = gojson.Unmarshal(raw, &s)
		return utf8.RuneCountInString(s), err
	}
	return utf8.RuneCount(p.scratch), nil
}

func (p *libChunk) deltaChars(raw gojson.RawMessage) (c [2]int, err error) {
	if isNull(raw) {
		return c, nil
	}
	if raw[0] != '{' {
		return c, errors.New("delta: want an object")
	}
	d := &p.delta
	d.Content, d.ReasoningContent, d.Reasoning = d.Content[:0], d.ReasoningContent[:0], d.Reasoning[:0]
	if err := gojson.UnmarshalOf(raw, d); err != nil {
		return c, err
	}
	if c[0], err = p.chars(d.Content); err != nil {
		return c, err
	}
	rc, err := p.chars(d.ReasoningContent)
	if err != nil {
		return c, err
	}
	r, err := p.chars(d.Reasoning)
	c[1] = max(rc, r)
	return c, err
}

func (p *libChunk) parse(b []byte, out *chunkInfo) error {
	*out = chunkInfo{}
	t := &p.top
	t.Choices, t.Usage = t.Choices[:0], t.Usage[:0]
	if err := gojson.UnmarshalOf(b, t); err != nil {
		return err
	}
	if !isNull(t.Choices) {
		if t.Choices[0] != '[' {
			return errors.New("choices: want an array")
		}
		for i := range p.choices {
			c := &p.choices[i]
			c.Text, c.Delta, c.Message, c.FinishReason = c.Text[:0], c.Delta[:0], c.Message[:0], c.FinishReason[:0]
		}
		p.choices = p.choices[:0]
		if err := gojson.UnmarshalOf(t.Choices, &p.choices); err != nil {
			return err
		}
		for i := range p.choices {
			c := &p.choices[i]
			n, err := p.chars(c.Text)
			if err != nil {
				return err
			}
			d, err := p.deltaChars(c.Delta)
			if err != nil {
				return err
			}
			m, err := p.deltaChars(c.Message)
			if err != nil {
				return err
			}
			out.contentChars += n + d[0] + m[0]
			out.reasoningChars += d[1] + m[1]
			out.finished = out.finished || !isNull(c.FinishReason)
		}
	}
	if !isNull(t.Usage) {
		var u struct {
			PromptTokens            float64 `json:"prompt_tokens"`
			CompletionTokens        float64 `json:"completion_tokens"`
			CompletionTokensDetails *struct {
				ReasoningTokens float64 `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		}
		if err := gojson.UnmarshalOf(t.Usage, &u); err != nil {
			return err
		}
		out.hasUsage = true
		count := func(f float64, frac *float64) int {
			if f != math.Trunc(f) {
				*frac = f // no count (see scanner.count)
				return 0
			}
			return int(f)
		}
		out.usage.promptTokens = count(u.PromptTokens, &out.usage.frac[0])
		out.usage.completionTokens = count(u.CompletionTokens, &out.usage.frac[1])
		if u.CompletionTokensDetails != nil {
			out.usage.reasoningTokens = count(u.CompletionTokensDetails.ReasoningTokens, &out.usage.frac[2])
		}
	}
	return nil
}

func FuzzLibChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var p libChunk
		var got chunkInfo
		err := p.parse(in, &got)
		if !json.Valid(in) || bytes.ContainsFunc(in, unicode.IsUpper) {
			// encoding/json's rules match member names in any letter
			// case ("Choices"), the scanner only exactly.
			return
		}
		want, ok := reference(in)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%q: error %v on valid input (want %+v)", in, err, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}
