package archive

import (
	"errors"
	"fmt"
	"strings"

	gojson "github.com/goccy/go-json"
)

// The records of requests.jsonl and engine_metrics.jsonl are decoded with
// github.com/goccy/go-json, which follows encoding/json's rules (field names
// match case-insensitively, unknown fields are skipped, null leaves a field
// as it is, a value of the wrong JSON type is an error) at about four times
// its speed on these lines; BenchmarkDecodeRequestLine has the numbers. A
// differential fuzz test (FuzzDecodeRequest) holds it to encoding/json.
// What this file adds is the position of an error in the line, and one
// shared copy of the strings that repeat from line to line.

// jsonLine decodes lines of one JSON-lines file; it is not safe for
// concurrent use (each reader goroutine has its own).
type jsonLine struct {
	// interned holds strings that repeat from line to line (phase, engine,
	// metric names and labels), so that the decoded records share one copy.
	interned map[string]string
}

const maxInterned = 4096

// intern returns the shared copy of s.
func (d *jsonLine) intern(s string) string {
	if s == "" {
		return s
	}
	if t, ok := d.interned[s]; ok {
		return t
	}
	if d.interned == nil {
		d.interned = map[string]string{}
	}
	if len(d.interned) < maxInterned {
		d.interned[s] = s
	}
	return s
}

// decodeRequest decodes one line of requests.jsonl into r.
func (d *jsonLine) decodeRequest(line []byte, r *Request) *LineError {
	if err := decodeLine(line, r); err != nil {
		return err
	}
	r.Phase, r.TokensSource, r.Engine = d.intern(r.Phase), d.intern(r.TokensSource), d.intern(r.Engine)
	return nil
}

// decodeEngineMetric decodes one line of engine_metrics.jsonl into m.
func (d *jsonLine) decodeEngineMetric(line []byte, m *EngineMetric) *LineError {
	if err := decodeLine(line, m); err != nil {
		return err
	}
	m.Name = d.intern(m.Name)
	for k, v := range m.Labels {
		m.Labels[k] = d.intern(v)
	}
	return nil
}

// decodeLine decodes one JSON object into v; an error gives the byte
// column where the problem is.
func decodeLine[T any](line []byte, v *T) *LineError {
	i := 0
	for i < len(line) && isJSONSpace(line[i]) {
		i++
	}
	if i == len(line) || line[i] != '{' {
		// encoding/json would take null, and report other values as a
		// type error on the whole record.
		return &LineError{Column: i + 1, Msg: "expected a JSON object ({...})"}
	}
	if err := gojson.UnmarshalOf(line, v); err != nil {
		return jsonLineError(line, err)
	}
	return nil
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// jsonLineError turns a decoding error of line into a LineError with the
// column of the byte it is at: for a syntax error the byte that is wrong
// (or the end of the line), for a value of the wrong type the start of the
// value.
func jsonLineError(line []byte, err error) *LineError {
	var se *gojson.SyntaxError
	var te *gojson.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &LineError{Column: syntaxErrorIndex(se.Offset, len(line)) + 1, Msg: "invalid JSON: " + se.Error(), Err: err}
	case errors.As(err, &te):
		start := valueStart(line, int(te.Offset))
		if te.Value == "number" && int(te.Offset) <= len(line) {
			// encoding/json names the number only where it could not be
			// converted; show it always.
			v := *te
			v.Value = "number " + string(line[start:te.Offset])
			te = &v
		}
		return &LineError{Column: start + 1, Msg: typeErrorMsg(te), Err: err}
	}
	return &LineError{Msg: "invalid JSON: " + err.Error(), Err: err}
}

// valueStart finds where the JSON value that ends at end (the offset a type
// error gives: the bytes read up to the end of the bad value) starts. A
// string goes back to its opening quote, a number or literal to the byte
// after the separator before it; an array or object (whose error offset is
// just after its opening bracket) is found at its bracket.
func valueStart(line []byte, end int) int {
	end = min(max(end, 0), len(line))
	if end == 0 {
		return 0
	}
	switch c := line[end-1]; {
	case c == '[' || c == '{':
		return end - 1
	case c == '"':
		// The opening quote is the nearest one before that is not
		// escaped: preceded by an even number of backslashes.
		for j := end - 2; j >= 0; j-- {
			if line[j] != '"' {
				continue
			}
			k := j
			for k > 0 && line[k-1] == '\\' {
				k--
			}
			if (j-k)%2 == 0 {
				return j
			}
		}
		return 0
	}
	j := end
	for j > 0 && strings.IndexByte("0123456789+-.eEtrufalsn", line[j-1]) >= 0 {
		j--
	}
	return j
}

// syntaxErrorIndex is the index of the byte a syntax error is at: the
// decoder's offset counts that byte as read; at the end of input it is the
// length of the input.
func syntaxErrorIndex(offset int64, n int) int {
	if int(offset) >= n {
		return n
	}
	return max(int(offset)-1, 0)
}

// typeErrorMsg says which field had the wrong JSON type.
func typeErrorMsg(te *gojson.UnmarshalTypeError) string {
	want := jsonKind(te.Type)
	if te.Field == "" {
		return fmt.Sprintf("expected a JSON %s, got %s", want, te.Value)
	}
	return fmt.Sprintf("field %s: expected %s, got %s", fieldPath(te.Field), want, te.Value)
}

// fieldPath drops the array indexes from the library's path of a field
// ("stages.0.start" becomes "stages.start"), as encoding/json writes it.
func fieldPath(p string) string {
	parts := strings.Split(p, ".")
	kept := parts[:0]
	for _, s := range parts {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			continue
		}
		kept = append(kept, s)
	}
	return strings.Join(kept, ".")
}
