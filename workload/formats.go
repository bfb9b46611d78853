package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxErrors is how many bad records one load reports; the rest are counted.
const MaxErrors = 20

// LineError is one problem in a dataset at a 1-based line, and column when
// known (0 otherwise).
type LineError struct {
	Line int
	Col  int
	Msg  string
}

// Errors is every problem found in one dataset (the first MaxErrors;
// Omitted counts the rest). Its message has one "file:line[:col]: what"
// line per problem.
type Errors struct {
	File    string
	Items   []LineError
	Omitted int
}

func (e *Errors) Error() string {
	var b strings.Builder
	for i, it := range e.Items {
		if i > 0 {
			b.WriteByte('\n')
		}
		if it.Col > 0 {
			fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, it.Line, it.Col, it.Msg)
		} else {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, it.Line, it.Msg)
		}
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n%s: ... and %d more bad records", e.File, e.Omitted)
	}
	return b.String()
}

// record is one JSON value of a dataset: an element of a top-level array or
// one non-blank line of JSONL.
type record struct {
	line, col int // where the value starts, 1-based
	defaultID string
	raw       []byte
}

// splitRecords cuts data into records: the elements of a top-level JSON
// array (default id: the 0-based index), or the non-blank lines of JSONL
// (default id: the line number).
func splitRecords(data []byte, name string) ([]record, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return splitArray(data, name)
	}
	var recs []record
	errs := &Errors{File: name}
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		t := bytes.TrimLeft(l, " \t")
		col := 1 + len(l) - len(t)
		if t = bytes.TrimRight(t, " \t\r"); len(t) > MaxRecordBytes {
			errs.add(LineError{Line: line, Col: col, Msg: recordTooLarge(len(t))})
		} else if len(t) > 0 {
			recs = append(recs, record{line: line, col: col, defaultID: strconv.Itoa(line), raw: t})
		}
	}
	if len(errs.Items) > 0 {
		return nil, errs
	}
	return recs, nil
}

// MaxRecordBytes bounds one record (a JSONL line, an element of a JSON
// array): 4 MiB is about a million tokens of English text, past the
// context of the models served today. A larger prompt would be copied into
// every request body in flight (a 30 MiB prompt took 3.6 GB; 300 MiB ran
// out of memory).
const MaxRecordBytes = 4 << 20

// MaxDatasetBytes bounds a dataset file (the largest public prompt sets,
// ShareGPT's among them, are under 1 GiB). The file is also refused when
// it is more than half of the memory available (Load).
const MaxDatasetBytes = 2 << 30

func recordTooLarge(n int) string {
	return fmt.Sprintf("record of %d bytes, more than the %d (%s) a record may have", n, MaxRecordBytes, byteText(MaxRecordBytes))
}

// add records a problem, or counts it past MaxErrors.
func (e *Errors) add(it LineError) {
	if len(e.Items) < MaxErrors {
		e.Items = append(e.Items, it)
	} else {
		e.Omitted++
	}
}

func splitArray(data []byte, name string) ([]record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '['
		return nil, syntaxErr(data, name, err, dec)
	}
	var recs []record
	errs := &Errors{File: name}
	line, counted := 1, 0
	for dec.More() {
		// The element starts past whitespace and the separating comma.
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(", \t\r\n", data[off]) >= 0 {
			off++
		}
		line += bytes.Count(data[counted:off], []byte{'\n'})
		counted = off
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxErr(data, name, err, dec)
		}
		_, col := lineCol(data, off+1)
		if len(raw) > MaxRecordBytes {
			errs.add(LineError{Line: line, Col: col, Msg: recordTooLarge(len(raw))})
			continue
		}
		recs = append(recs, record{line: line, col: col, defaultID: strconv.Itoa(len(recs)), raw: raw})
	}
	if len(errs.Items) > 0 {
		return nil, errs
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, syntaxErr(data, name, err, dec)
	}
	if _, err := dec.Token(); err != io.EOF {
		l, c := lineCol(data, int(dec.InputOffset())+1)
		return nil, oneErr(name, l, c, "unexpected data after the top-level array")
	}
	return recs, nil
}

// syntaxErr turns a JSON decoding error of the whole file into a positioned
// error.
func syntaxErr(data []byte, name string, err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		l, c := lineCol(data, int(se.Offset))
		return oneErr(name, l, c, "invalid JSON: "+se.Error())
	}
	l, c := lineCol(data, int(dec.InputOffset())+1)
	return oneErr(name, l, c, "invalid JSON: "+err.Error())
}

func oneErr(name string, line, col int, msg string) error {
	return &Errors{File: name, Items: []LineError{{Line: line, Col: col, Msg: msg}}}
}

// lineCol returns the 1-based line and column of the byte just before
// offset off (a json.SyntaxError's offset is just past the offending byte).
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off-1, 0), len(data))
	before := data[:off]
	line := 1 + bytes.Count(before, []byte{'\n'})
	col := off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// detect names the format from the keys of the first record.
func detect(r record, name string) (string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &keys); err != nil || keys == nil {
		return "", oneErr(name, r.line, r.col, "cannot detect the format: the first record is not a JSON object")
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("conversations"):
		return FormatShareGPT, nil
	case has("messages"):
		return FormatChat, nil
	case has("task_id") && has("prompt"):
		return FormatCode, nil
	case has("prompt"):
		return FormatJSONL, nil
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, strconv.Quote(k))
	}
	sort.Strings(names)
	return "", oneErr(name, r.line, r.col, fmt.Sprintf(
		"cannot detect the format from the first record's keys (%s): want \"conversations\" (sharegpt), \"messages\" (chat), \"task_id\" and \"prompt\" (code) or \"prompt\" (jsonl); set the format",
		strings.Join(names, ", ")))
}

// decoder turns one record into a prompt; skip reports a record without a
// usable prompt that is not an error.
type decoder func(r record) (p Prompt, skip bool, err error)

var decoders = map[string]decoder{
	FormatShareGPT: decodeShareGPT,
	FormatJSONL:    decodeJSONL,
	FormatChat:     decodeChat,
	FormatCode:     decodeCode,
}

// decodeRecords decodes every record, collecting up to MaxErrors problems
// (with duplicate ids among them).
func decodeRecords(format string, recs []record, name string) ([]Prompt, int, error) {
	dec := decoders[format]
	var (
		prompts []Prompt
		skipped int
		errs    = &Errors{File: name}
		seen    = make(map[string]int, len(recs))
	)
	fail := func(r record, msg string) {
		if len(errs.Items) < MaxErrors {
			errs.Items = append(errs.Items, LineError{Line: r.line, Msg: msg})
		} else {
			errs.Omitted++
		}
	}
	for _, r := range recs {
		p, skip, err := dec(r)
		switch {
		case err != nil:
			var le *LineError
			if errors.As(err, &le) {
				if len(errs.Items) < MaxErrors {
					errs.Items = append(errs.Items, *le)
				} else {
					errs.Omitted++
				}
			} else {
				fail(r, err.Error())
			}
			continue
		case skip:
			skipped++
			continue
		}
		if first, dup := seen[p.ID]; dup {
			fail(r, fmt.Sprintf("duplicate id %q (first on line %d)", p.ID, first))
			continue
		}
		seen[p.ID] = r.line
		prompts = append(prompts, p)
	}
	if len(errs.Items) > 0 {
		return nil, 0, errs
	}
	return prompts, skipped, nil
}

func (e *LineError) Error() string { return e.Msg }

// unmarshal decodes a record into v and words the error so that a person
// can find the problem: the column of a syntax error, the field and the
// types of a type error.
func unmarshal(r record, v any) error {
	if r.raw[0] != '{' {
		what := "a scalar"
		switch r.raw[0] {
		case '[':
			what = "an array"
		case '"':
			what = "a string"
		}
		if json.Valid(r.raw) {
			return &LineError{Line: r.line, Col: r.col, Msg: "record: got " + what + ", want a JSON object"}
		}
	}
	err := json.Unmarshal(r.raw, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &LineError{Line: r.line, Col: r.col + int(se.Offset) - 1, Msg: "invalid JSON: " + se.Error()}
	case errors.As(err, &te) && te.Field != "":
		return &LineError{Line: r.line, Msg: fmt.Sprintf("field %q: got %s, want %s", te.Field, te.Value, jsonType(te.Type.Kind().String()))}
	}
	return &LineError{Line: r.line, Msg: err.Error()}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "int", "int64", "int32":
		return "integer"
	case "float64", "float32":
		return "number"
	case "slice":
		return "array"
	case "struct", "map":
		return "object"
	case "bool":
		return "boolean"
	}
	return kind
}

// recordID returns the record's "id" (a string or a number) or its
// default id.
func recordID(r record, raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return r.defaultID, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", &LineError{Line: r.line, Msg: fmt.Sprintf("field %q: %v", field, err)}
		}
		if strings.TrimSpace(s) == "" {
			return "", &LineError{Line: r.line, Msg: fmt.Sprintf("field %q: empty", field)}
		}
		return s, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), nil
	}
	return "", &LineError{Line: r.line, Msg: fmt.Sprintf("field %q: want a string or a number", field)}
}

func checkMaxTokens(r record, n int) error {
	if n < 0 {
		return &LineError{Line: r.line, Msg: fmt.Sprintf("field \"max_tokens\": %d, want >= 0", n)}
	}
	return nil
}

func missing(r record, field string) error {
	return &LineError{Line: r.line, Msg: fmt.Sprintf("missing field %q", field)}
}

// ShareGPT: [{"id"?, "conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}]}].
// Turns written as {"role", "content"} are accepted too.
type shareGPTRecord struct {
	ID            json.RawMessage `json:"id"`
	Conversations *[]shareGPTTurn `json:"conversations"`
}

type shareGPTTurn struct {
	From    *string `json:"from"`
	Value   *string `json:"value"`
	Role    *string `json:"role"`
	Content *string `json:"content"`
}

func (t shareGPTTurn) speaker() string {
	if t.From != nil {
		return strings.ToLower(*t.From)
	}
	if t.Role != nil {
		return strings.ToLower(*t.Role)
	}
	return ""
}

func (t shareGPTTurn) text() string {
	if t.Value != nil {
		return *t.Value
	}
	if t.Content != nil {
		return *t.Content
	}
	return ""
}

func decodeShareGPT(r record) (Prompt, bool, error) {
	var rec shareGPTRecord
	if err := unmarshal(r, &rec); err != nil {
		return Prompt{}, false, err
	}
	if rec.Conversations == nil {
		return Prompt{}, false, missing(r, "conversations")
	}
	id, err := recordID(r, rec.ID, "id")
	if err != nil {
		return Prompt{}, false, err
	}
	turns := *rec.Conversations
	for i, t := range turns {
		if t.speaker() == "" {
			return Prompt{}, false, &LineError{Line: r.line, Msg: fmt.Sprintf("conversations[%d]: missing \"from\"", i)}
		}
	}
	for i, t := range turns {
		switch t.speaker() {
		case "human", "user":
		default:
			continue
		}
		if strings.TrimSpace(t.text()) == "" {
			return Prompt{}, true, nil
		}
		p := Prompt{ID: id, Prompt: t.text()}
		for _, next := range turns[i+1:] {
			switch next.speaker() {
			case "gpt", "assistant", "chatgpt", "bard", "bing", "model":
				p.RefOutputChars = utf8.RuneCountInString(next.text())
			default:
				continue
			}
			break
		}
		return p, false, nil
	}
	return Prompt{}, true, nil // no human turn
}

// JSONL prompts: {"prompt": "...", "max_tokens"?: n, "id"?: ...}.
type jsonlRecord struct {
	ID        json.RawMessage `json:"id"`
	Prompt    *string         `json:"prompt"`
	MaxTokens int             `json:"max_tokens"`
}

func decodeJSONL(r record) (Prompt, bool, error) {
	var rec jsonlRecord
	if err := unmarshal(r, &rec); err != nil {
		return Prompt{}, false, err
	}
	if rec.Prompt == nil {
		return Prompt{}, false, missing(r, "prompt")
	}
	if strings.TrimSpace(*rec.Prompt) == "" {
		return Prompt{}, false, &LineError{Line: r.line, Msg: "field \"prompt\": empty"}
	}
	if err := checkMaxTokens(r, rec.MaxTokens); err != nil {
		return Prompt{}, false, err
	}
	id, err := recordID(r, rec.ID, "id")
	if err != nil {
		return Prompt{}, false, err
	}
	return Prompt{ID: id, Prompt: *rec.Prompt, MaxTokens: rec.MaxTokens}, false, nil
}

// OpenAI chat JSONL: {"messages": [{"role": "user", "content": "..."}], "max_tokens"?, "id"?}.
type chatRecord struct {
	ID        json.RawMessage `json:"id"`
	Messages  *[]chatMessage  `json:"messages"`
	MaxTokens int             `json:"max_tokens"`
}

type chatMessage struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}

var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

func decodeChat(r record) (Prompt, bool, error) {
	var rec chatRecord
	if err := unmarshal(r, &rec); err != nil {
		return Prompt{}, false, err
	}
	if rec.Messages == nil {
		return Prompt{}, false, missing(r, "messages")
	}
	if len(*rec.Messages) == 0 {
		return Prompt{}, false, &LineError{Line: r.line, Msg: "field \"messages\": empty"}
	}
	if err := checkMaxTokens(r, rec.MaxTokens); err != nil {
		return Prompt{}, false, err
	}
	id, err := recordID(r, rec.ID, "id")
	if err != nil {
		return Prompt{}, false, err
	}
	msgs := make([]Message, len(*rec.Messages))
	user := false
	for i, m := range *rec.Messages {
		bad := func(msg string) error {
			return &LineError{Line: r.line, Msg: fmt.Sprintf("messages[%d]: %s", i, msg)}
		}
		if m.Role == nil {
			return Prompt{}, false, bad("missing \"role\"")
		}
		if !chatRoles[*m.Role] {
			return Prompt{}, false, bad(fmt.Sprintf("role %q, want system, developer, user, assistant or tool", *m.Role))
		}
		c := bytes.TrimSpace(m.Content)
		if len(c) == 0 || c[0] != '"' {
			what := "missing \"content\""
			if len(c) > 0 {
				what = "\"content\" must be a string (content parts are not supported)"
			}
			return Prompt{}, false, bad(what)
		}
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return Prompt{}, false, bad("\"content\": " + err.Error())
		}
		msgs[i] = Message{Role: *m.Role, Content: s}
		user = user || (*m.Role == "user" && strings.TrimSpace(s) != "")
	}
	if !user {
		return Prompt{}, false, &LineError{Line: r.line, Msg: "no non-empty user message"}
	}
	return Prompt{ID: id, Messages: msgs, MaxTokens: rec.MaxTokens}, false, nil
}

// Code tasks, HumanEval style: {"task_id": "...", "prompt": "...", "canonical_solution"?: "...", "max_tokens"?}.
type codeRecord struct {
	TaskID    *string `json:"task_id"`
	Prompt    *string `json:"prompt"`
	Solution  string  `json:"canonical_solution"`
	MaxTokens int     `json:"max_tokens"`
}

func decodeCode(r record) (Prompt, bool, error) {
	var rec codeRecord
	if err := unmarshal(r, &rec); err != nil {
		return Prompt{}, false, err
	}
	switch {
	case rec.TaskID == nil:
		return Prompt{}, false, missing(r, "task_id")
	case strings.TrimSpace(*rec.TaskID) == "":
		return Prompt{}, false, &LineError{Line: r.line, Msg: "field \"task_id\": empty"}
	case rec.Prompt == nil:
		return Prompt{}, false, missing(r, "prompt")
	case strings.TrimSpace(*rec.Prompt) == "":
		return Prompt{}, false, &LineError{Line: r.line, Msg: "field \"prompt\": empty"}
	}
	if err := checkMaxTokens(r, rec.MaxTokens); err != nil {
		return Prompt{}, false, err
	}
	return Prompt{ID: *rec.TaskID, Prompt: *rec.Prompt, MaxTokens: rec.MaxTokens, RefOutputChars: utf8.RuneCountInString(rec.Solution)}, false, nil
}
