package archive

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small JSON decoder for the records of requests.jsonl and
// engine_metrics.jsonl. encoding/json decodes them correctly but slowly
// (reflection, and a validation pass before decoding); a run of 100,000
// requests with token_times must load in well under a second.
//
// It follows encoding/json's rules for these types, with one difference:
// field names match exactly (encoding/json also accepts other letter cases).
// Unknown fields are skipped after being checked to be valid JSON; a known
// field with a value of the wrong JSON type is an error; null leaves a field
// at its zero value. A differential fuzz test (FuzzDecodeRequest) holds it to
// encoding/json.

// jsonLine decodes one JSON text. Errors carry the byte column.
type jsonLine struct {
	b []byte
	i int
	// typeError is the first value of a wrong type in the line.
	typeError *LineError
	// floats and ints are scratch space for arrays, reused between lines.
	floats []float64
	ints   []int
	// interned holds strings that repeat from line to line (phase, engine,
	// metric names and labels), so that each is allocated once.
	interned map[string]string
}

const maxInterned = 4096

const maxJSONDepth = 10000

func (d *jsonLine) fail(at int, format string, args ...any) *LineError {
	return &LineError{Column: at + 1, Msg: fmt.Sprintf(format, args...)}
}

// syntaxErr reports an unexpected byte (or the end of the line) at d.i.
func (d *jsonLine) syntaxErr(context string) *LineError {
	if d.i >= len(d.b) {
		return d.fail(d.i, "invalid JSON: unexpected end of JSON input")
	}
	return d.fail(d.i, "invalid JSON: invalid character %s %s", quoteChar(d.b[d.i]), context)
}

func quoteChar(c byte) string {
	if c >= utf8.RuneSelf {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

func (d *jsonLine) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// kind names the JSON value starting at d.i, for type errors.
func (d *jsonLine) kind() string {
	if d.i >= len(d.b) {
		return "nothing"
	}
	switch c := d.b[d.i]; {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	}
	return "invalid value"
}

// typeErr records a value of the wrong type for field and moves over it.
// As in encoding/json, decoding goes on, so that a syntax error later in the
// line is reported rather than the type error; the first type error is
// reported at the end.
func (d *jsonLine) typeErr(field, want string) *LineError {
	at := d.i
	got := d.kind()
	if got == "number" {
		if n, ok := d.scanNumber(); ok {
			got = "number " + string(n)
		}
		d.i = at
	}
	if err := d.skip(0); err != nil {
		return err
	}
	if d.typeError == nil {
		d.typeError = d.fail(at, "field %s: expected %s, got %s", field, want, got)
	}
	return nil
}

// null consumes a null literal if there is one.
func (d *jsonLine) null() (bool, *LineError) {
	if d.i < len(d.b) && d.b[d.i] == 'n' {
		if !d.literal("null") {
			return false, d.syntaxErr("in literal null")
		}
		return true, nil
	}
	return false, nil
}

func (d *jsonLine) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	// Move to the first wrong byte, for the error position.
	for k := 0; k < len(lit) && d.i < len(d.b) && d.b[d.i] == lit[k]; k++ {
		d.i++
	}
	return false
}

// object decodes an object, calling field for each member with d.i at the
// member's value; field must consume the value.
func (d *jsonLine) object(field func(key string) *LineError) *LineError {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.fail(d.i, "expected a JSON object ({...})")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return d.end()
	}
	for {
		d.ws()
		k, err := d.key()
		if err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntaxErr("")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return d.end()
		default:
			return d.syntaxErr("after object key:value pair")
		}
	}
}

// end checks that only white space follows the top-level value.
func (d *jsonLine) end() *LineError {
	d.ws()
	if d.i < len(d.b) {
		return d.syntaxErr("after top-level value")
	}
	return nil
}

// key reads an object key and the colon after it, leaving d.i at the value.
func (d *jsonLine) key() (string, *LineError) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.syntaxErr("looking for beginning of object key string")
	}
	k, err := d.rawStringIntern(true)
	if err != nil {
		return "", err
	}
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != ':' {
		return "", d.syntaxErr("after object key")
	}
	d.i++
	d.ws()
	return k, nil
}

// rawString reads a string at d.i (which is '"').
func (d *jsonLine) rawString() (string, *LineError) {
	return d.rawStringIntern(false)
}

// rawStringIntern reads a string at d.i (which is '"'), sharing one copy of
// each value between lines when intern is set.
func (d *jsonLine) rawStringIntern(intern bool) (string, *LineError) {
	start := d.i + 1
	j := start
	for j < len(d.b) {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			if !intern {
				return string(d.b[start:j]), nil
			}
			if s, ok := d.interned[string(d.b[start:j])]; ok {
				return s, nil
			}
			s := string(d.b[start:j])
			if d.interned == nil {
				d.interned = map[string]string{}
			}
			if len(d.interned) < maxInterned {
				d.interned[s] = s
			}
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return d.slowString(start)
		}
		j++
	}
	d.i = len(d.b)
	return "", d.syntaxErr("")
}

// slowString reads a string with escapes or non-ASCII bytes from start (just
// after the opening quote), as encoding/json does: invalid UTF-8 and lone
// surrogates become U+FFFD.
func (d *jsonLine) slowString(start int) (string, *LineError) {
	out := make([]byte, 0, 64)
	j := start
	for {
		if j >= len(d.b) {
			d.i = j
			return "", d.syntaxErr("")
		}
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(out), nil
		case c < 0x20:
			d.i = j
			return "", d.syntaxErr("in string literal")
		case c == '\\':
			j++
			if j >= len(d.b) {
				d.i = j
				return "", d.syntaxErr("")
			}
			switch e := d.b[j]; e {
			case '"', '\\', '/':
				out = append(out, e)
				j++
			case 'b':
				out = append(out, '\b')
				j++
			case 'f':
				out = append(out, '\f')
				j++
			case 'n':
				out = append(out, '\n')
				j++
			case 'r':
				out = append(out, '\r')
				j++
			case 't':
				out = append(out, '\t')
				j++
			case 'u':
				r, ok := hex4(d.b, j+1)
				if !ok {
					d.i = j + 1
					for k := 0; k < 4 && d.i < len(d.b) && isHex(d.b[d.i]); k++ {
						d.i++
					}
					return "", d.syntaxErr("in \\u hexadecimal character escape")
				}
				j += 5
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is one
					// rune; anything else is U+FFFD.
					if j+1 < len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
						if r2, ok := hex4(d.b, j+2); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								j += 6
								out = utf8.AppendRune(out, dec)
								break
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				d.i = j
				return "", d.syntaxErr("in string escape code")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(d.b[j:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.b[j:j+size]...)
			}
			j += size
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// scanNumber moves over a JSON number and returns its text; ok is false, with
// d.i at the bad byte, when there is no valid number at d.i.
func (d *jsonLine) scanNumber() ([]byte, bool) {
	b, start := d.b, d.i
	j := d.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		d.i = j
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			d.i = j
			return nil, false
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			d.i = j
			return nil, false
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	d.i = j
	return b[start:j], true
}

func (d *jsonLine) numberSyntaxErr() *LineError {
	return d.syntaxErr("in numeric literal")
}

// float decodes a number field into *v (null leaves it unchanged).
func (d *jsonLine) float(field string, v *float64) *LineError {
	if null, err := d.null(); null || err != nil {
		return err
	}
	if d.kind() != "number" {
		return d.typeErr(field, "number")
	}
	at := d.i
	n, ok := d.scanNumber()
	if !ok {
		return d.numberSyntaxErr()
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil { // out of range
		d.i = at
		return d.typeErr(field, "number")
	}
	*v = f
	return nil
}

// integer decodes a whole-number field into *v (null leaves it unchanged).
func (d *jsonLine) integer(field string, v *int) *LineError {
	if null, err := d.null(); null || err != nil {
		return err
	}
	if d.kind() != "number" {
		return d.typeErr(field, "integer")
	}
	at := d.i
	n, ok := d.scanNumber()
	if !ok {
		return d.numberSyntaxErr()
	}
	x, err := strconv.ParseInt(string(n), 10, strconv.IntSize)
	if err != nil { // a fraction, an exponent, or out of range
		d.i = at
		return d.typeErr(field, "integer")
	}
	*v = int(x)
	return nil
}

// boolean decodes a true/false field into *v (null leaves it unchanged).
func (d *jsonLine) boolean(field string, v *bool) *LineError {
	if null, err := d.null(); null || err != nil {
		return err
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == 't':
		if !d.literal("true") {
			return d.syntaxErr("in literal true")
		}
		*v = true
	case d.i < len(d.b) && d.b[d.i] == 'f':
		if !d.literal("false") {
			return d.syntaxErr("in literal false")
		}
		*v = false
	default:
		return d.typeErr(field, "boolean (true or false)")
	}
	return nil
}

// str decodes a string field into *v (null leaves it unchanged).
func (d *jsonLine) str(field string, v *string) *LineError {
	return d.strIntern(field, v, false)
}

// strIntern is str, interning the value when intern is set.
func (d *jsonLine) strIntern(field string, v *string, intern bool) *LineError {
	if null, err := d.null(); null || err != nil {
		return err
	}
	if d.kind() != "string" {
		return d.typeErr(field, "string")
	}
	s, err := d.rawStringIntern(intern)
	if err != nil {
		return err
	}
	*v = s
	return nil
}

// array decodes an array, calling elem for each element with d.i at it.
// null sets nothing and returns isNull.
func (d *jsonLine) array(field string, elem func() *LineError) (isNull bool, _ *LineError) {
	if null, err := d.null(); null || err != nil {
		return null, err
	}
	if d.kind() != "array" {
		return false, d.typeErr(field, "array")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return false, nil
	}
	for {
		d.ws()
		if err := elem(); err != nil {
			return false, err
		}
		d.ws()
		if d.i >= len(d.b) {
			return false, d.syntaxErr("")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return false, nil
		default:
			return false, d.syntaxErr("after array element")
		}
	}
}

// floatArray decodes an array of numbers into *v (null sets it to nil).
// It and intArray are two copies on purpose: a generic version taking the
// element decoder as a function value makes every element escape to the
// heap (BenchmarkReadRequests: 6.7M allocations instead of 0.3M at 64
// token times per request).
func (d *jsonLine) floatArray(field string, v *[]float64) *LineError {
	d.floats = d.floats[:0]
	null, err := d.array(field, func() *LineError {
		var f float64
		if err := d.float(field, &f); err != nil {
			return err
		}
		d.floats = append(d.floats, f)
		return nil
	})
	if err != nil {
		return err
	}
	if null {
		*v = nil
		return nil
	}
	*v = append(make([]float64, 0, len(d.floats)), d.floats...)
	return nil
}

// intArray decodes an array of whole numbers into *v (null sets it to nil).
func (d *jsonLine) intArray(field string, v *[]int) *LineError {
	d.ints = d.ints[:0]
	null, err := d.array(field, func() *LineError {
		var n int
		if err := d.integer(field, &n); err != nil {
			return err
		}
		d.ints = append(d.ints, n)
		return nil
	})
	if err != nil {
		return err
	}
	if null {
		*v = nil
		return nil
	}
	*v = append(make([]int, 0, len(d.ints)), d.ints...)
	return nil
}

// members decodes an object value of a field, calling val for each member
// with d.i at its value. null sets nothing and returns isNull.
func (d *jsonLine) members(field string, val func(key string) *LineError) (isNull bool, _ *LineError) {
	if null, err := d.null(); null || err != nil {
		return null, err
	}
	if d.kind() != "object" {
		return false, d.typeErr(field, "object")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return false, nil
	}
	for {
		d.ws()
		k, err := d.key()
		if err != nil {
			return false, err
		}
		if err := val(k); err != nil {
			return false, err
		}
		d.ws()
		if d.i >= len(d.b) {
			return false, d.syntaxErr("")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return false, nil
		default:
			return false, d.syntaxErr("after object key:value pair")
		}
	}
}

// floatMap decodes an object of numbers into *v, adding to an existing map
// as encoding/json does (null sets it to nil).
func (d *jsonLine) floatMap(field string, v *map[string]float64) *LineError {
	null, err := d.members(field, func(k string) *LineError {
		var f float64
		if err := d.float(field, &f); err != nil {
			return err
		}
		if *v == nil {
			*v = map[string]float64{}
		}
		(*v)[k] = f
		return nil
	})
	if err == nil && null {
		*v = nil
	}
	if err == nil && !null && *v == nil {
		*v = map[string]float64{}
	}
	return err
}

// stringMap decodes an object of strings into *v (null sets it to nil).
func (d *jsonLine) stringMap(field string, v *map[string]string) *LineError {
	null, err := d.members(field, func(k string) *LineError {
		var s string
		if err := d.strIntern(field, &s, true); err != nil {
			return err
		}
		if *v == nil {
			*v = map[string]string{}
		}
		(*v)[k] = s
		return nil
	})
	if err == nil && null {
		*v = nil
	}
	if err == nil && !null && *v == nil {
		*v = map[string]string{}
	}
	return err
}

// skip moves over any JSON value, checking its syntax.
func (d *jsonLine) skip(depth int) *LineError {
	if depth > maxJSONDepth {
		return d.fail(d.i, "invalid JSON: exceeded max depth")
	}
	if d.i >= len(d.b) {
		return d.syntaxErr("")
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, err := d.rawString()
		return err
	case c == '{':
		_, err := d.members("", func(string) *LineError { return d.skip(depth + 1) })
		return err
	case c == '[':
		_, err := d.array("", func() *LineError { return d.skip(depth + 1) })
		return err
	case c == 't':
		if !d.literal("true") {
			return d.syntaxErr("in literal true")
		}
	case c == 'f':
		if !d.literal("false") {
			return d.syntaxErr("in literal false")
		}
	case c == 'n':
		if !d.literal("null") {
			return d.syntaxErr("in literal null")
		}
	case c == '-' || c >= '0' && c <= '9':
		if _, ok := d.scanNumber(); !ok {
			return d.numberSyntaxErr()
		}
	default:
		return d.syntaxErr("looking for beginning of value")
	}
	return nil
}

// decodeRequest decodes one line of requests.jsonl into r.
func (d *jsonLine) decodeRequest(line []byte, r *Request) *LineError {
	d.b, d.i, d.typeError = line, 0, nil
	return d.finish(d.object(func(k string) *LineError {
		switch k {
		case "id":
			return d.str(k, &r.ID)
		case "phase":
			return d.strIntern(k, &r.Phase, true)
		case "prompt_id":
			return d.str(k, &r.PromptID)
		case "sent_at":
			return d.float(k, &r.SentAt)
		case "first_token_at":
			return d.float(k, &r.FirstTokenAt)
		case "done_at":
			return d.float(k, &r.DoneAt)
		case "prompt_tokens":
			return d.integer(k, &r.PromptTokens)
		case "output_tokens":
			return d.integer(k, &r.OutputTokens)
		case "reasoning_tokens":
			return d.integer(k, &r.ReasoningTokens)
		case "tokens_source":
			return d.strIntern(k, &r.TokensSource, true)
		case "output_chars":
			return d.integer(k, &r.OutputChars)
		case "ok":
			return d.boolean(k, &r.OK)
		case "error":
			return d.str(k, &r.Error)
		case "token_times":
			return d.floatArray(k, &r.TokenTimes)
		case "token_counts":
			return d.intArray(k, &r.TokenCounts)
		case "engine_timings":
			return d.floatMap(k, &r.EngineTimings)
		case "max_tokens":
			return d.integer(k, &r.MaxTokens)
		case "engine":
			return d.strIntern(k, &r.Engine, true)
		}
		return d.skip(0)
	}))
}

// decodeEngineMetric decodes one line of engine_metrics.jsonl into m.
func (d *jsonLine) decodeEngineMetric(line []byte, m *EngineMetric) *LineError {
	d.b, d.i, d.typeError = line, 0, nil
	return d.finish(d.object(func(k string) *LineError {
		switch k {
		case "t":
			return d.float(k, &m.T)
		case "name":
			return d.strIntern(k, &m.Name, true)
		case "labels":
			return d.stringMap(k, &m.Labels)
		case "value":
			return d.float(k, &m.Value)
		}
		return d.skip(0)
	}))
}

// finish returns the syntax error of a line if any, else its first type
// error.
func (d *jsonLine) finish(err *LineError) *LineError {
	if err != nil {
		return err
	}
	return d.typeError
}
