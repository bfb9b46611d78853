package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// InWords writes each JSON object or array inside s (a check's detail
// made with expr's toJSON, indented over several lines) in words on one
// line: {"gpu0": 0.081, "gpu1": 0.012} as "gpu0 0.081 and gpu1 0.012",
// an empty one as "none", a nested one in parentheses. Text that is no
// JSON is kept as it is.
func InWords(s string) string {
	if !strings.ContainsAny(s, "{[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '{' && c != '[' {
			b.WriteByte(c)
			i++
			continue
		}
		words, n, ok := jsonWords(s[i:])
		if !ok {
			b.WriteByte(c)
			i++
			continue
		}
		b.WriteString(words)
		i += n
	}
	return b.String()
}

// jsonWords reads one JSON object or array at the start of s: its words
// and its length in bytes; false when s does not start with one.
func jsonWords(s string) (string, int, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	words, err := valueWords(dec, false)
	if err != nil {
		return "", 0, false
	}
	return words, int(dec.InputOffset()), true
}

// valueWords reads the next JSON value of dec in words; nested ones (in
// an object or array) in parentheses.
func valueWords(dec *json.Decoder, nested bool) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		switch v := tok.(type) {
		case nil:
			return "null", nil
		case string:
			return v, nil
		}
		return strings.TrimSpace(strings.Trim(string(mustJSON(tok)), `"`)), nil
	}
	var items []string
	for dec.More() {
		key := ""
		if d == '{' {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			ks, ok := k.(string)
			if !ok {
				return "", io.ErrUnexpectedEOF
			}
			key = ks + " "
		}
		v, err := valueWords(dec, true)
		if err != nil {
			return "", err
		}
		items = append(items, key+v)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return "", err
	}
	out := listWords(items)
	if nested && len(items) > 0 {
		out = "(" + out + ")"
	}
	return out, nil
}

// listWords joins items as "a", "a and b", "a, b and c"; none as "none".
func listWords(items []string) string {
	switch len(items) {
	case 0:
		return "none"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func mustJSON(v any) []byte {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	return b.Bytes()
}
