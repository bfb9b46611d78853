package archive

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	gojson "github.com/goccy/go-json"
	"github.com/joulebench/joulebench/archive/record"
)

// The records of requests.jsonl and engine_metrics.jsonl are decoded with
// github.com/goccy/go-json, which follows encoding/json's rules (field names
// match case-insensitively, unknown fields are skipped, null leaves a field
// as it is, a value of the wrong JSON type is an error) at about four times
// its speed on these lines; BenchmarkDecodeRequestLine has the numbers. A
// differential fuzz test (FuzzDecodeRequest) holds it to encoding/json.
// What this file adds is the position of an error in the line, and one
// shared copy of the strings that repeat from line to line, and the other
// strings a record keeps copied side by side into an arena (strArena).

// jsonLine decodes lines of one JSON-lines file; it is not safe for
// concurrent use (each reader goroutine has its own).
type jsonLine struct {
	// interned holds strings that repeat from line to line (phase, engine,
	// metric names and labels), so that the decoded records share one copy.
	interned map[string]string
	// arena holds the strings the records keep that are not interned
	// (id, prompt_id, ...), and the interned ones.
	arena strArena

	// The token_times fast path parses into slab, a large array that the
	// lists of many records share (each capped at its own length, so an
	// append to one cannot write into the next): no list is allocated or
	// copied on its own. times is the list of the line last parsed.
	slab   []float64
	times  []float64
	buf    []byte
	second lastSecond // of the last token time, for parseNumberAfter
	// tw packs the token times of decodeRequestPacked into the run's
	// store (nil until the first line).
	tw *record.TimesWriter
}

// slabFloats is the size of a slab of token times (1 MiB): large enough
// that allocating slabs costs nothing next to parsing them, small enough
// that the unused end of each reader's last slab does not matter.
const slabFloats = 1 << 17

const maxInterned = 4096

// intern returns the shared copy of s (in the arena; past maxInterned
// strings, a copy of its own there).
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
	s = d.arena.keep(s)
	if len(d.interned) < maxInterned {
		d.interned[s] = s
	}
	return s
}

// keepStrings gives r its own copy of the strings the decoder made: the
// repeating ones interned, the others in the arena.
func (d *jsonLine) keepStrings(r *record.Request) {
	r.Phase, r.TokensSource, r.Engine = d.intern(r.Phase), d.intern(r.TokensSource), d.intern(r.Engine)
	r.ID, r.PromptID = d.arena.keep(r.ID), d.arena.keep(r.PromptID)
	r.ConversationID, r.Error = d.arena.keep(r.ConversationID), d.arena.keep(r.Error)
}

// strArena copies the strings that decoded records keep side by side into
// large chunks. The decoder allocates each string on its own, and one
// shorter than 16 bytes (an id like "f000000") shares a 16-byte block of
// Go's tiny allocator with others of the same line, most of which are
// dropped (a phase replaced by its interned copy, a field name): the
// block, and so all of them, lives as long as the record (issue 46: 63
// bytes live a request where its strings need 13). Copied, the decoder's
// strings are all garbage.
//
// Each string is made with unsafe.String over a chunk's bytes. That is
// safe because a chunk is only appended to, within its capacity: the bytes
// below its length are never written again, and a full chunk is replaced,
// not reused, so a string's bytes never change. A chunk lives as long as
// one of its strings does. Not safe for concurrent use (each reader has
// its own).
type strArena struct {
	chunk []byte
}

// arenaChunk is the size of a chunk (64 KiB): large enough that a chunk
// costs nothing next to the strings it holds, small enough that the unused
// end of each reader's last chunk does not matter.
const arenaChunk = 64 << 10

// keep returns a copy of s in the arena. A string longer than the room
// left in the chunk starts a new chunk; one longer than a chunk gets an
// allocation of its own, and the chunk goes on after it.
func (a *strArena) keep(s string) string {
	n := len(s)
	switch {
	case n == 0:
		return ""
	case n > arenaChunk:
		return strings.Clone(s)
	case cap(a.chunk)-len(a.chunk) < n:
		a.chunk = make([]byte, 0, arenaChunk)
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, s...)
	return unsafe.String(&a.chunk[start], n)
}

// decodeRequest decodes one line of requests.jsonl into r.
//
// token_times is most of a line's bytes and of its decoding time, and the
// library grows the slice by doubling (keeping spare capacity). When the
// line has one top-level token_times member holding an array of numbers,
// parseNumber decodes that array alone into a scratch slice that is reused
// from line to line, the record gets a copy of exactly its length, and the
// library decodes a copy of the line in which the array is replaced by
// null. Any other line, and any line the library rejects, is decoded as it
// is, so that errors and their columns are the library's.
func (d *jsonLine) decodeRequest(line []byte, r *record.Request) *LineError {
	if lo, hi, ok := d.tokenTimes(line); ok {
		d.buf = append(append(append(d.buf[:0], line[:lo]...), "null"...), line[hi:]...)
		if decodeLine(d.buf, r) == nil {
			r.TokenTimes = d.times
			d.keepStrings(r)
			return nil
		}
		*r = record.Request{}
		d.slab = d.slab[:len(d.slab)-len(d.times)] // the slab's space back
	}
	if err := decodeLine(line, r); err != nil {
		return err
	}
	d.keepStrings(r)
	return nil
}

// decodeRequestPacked is decodeRequest with the token times packed into
// store (record.TimesWriter); the times parsed into the slab give their
// room back.
func (d *jsonLine) decodeRequestPacked(store *record.TimesStore, line []byte, r *record.Request) *LineError {
	if err := d.decodeRequest(line, r); err != nil {
		return err
	}
	n := len(r.TokenTimes)
	if n == 0 {
		return nil
	}
	inSlab := len(d.times) == n && &d.times[0] == &r.TokenTimes[0]
	if d.tw == nil {
		d.tw = store.NewWriter()
	}
	if err := d.tw.Pack(r); err != nil {
		return &LineError{Msg: err.Error(), Err: err}
	}
	if inSlab {
		d.slab, d.times = d.slab[:len(d.slab)-n], nil
	}
	return nil
}

// flush writes out what the reader packed (decodeRequestPacked); its
// error is kept by the store.
func (d *jsonLine) flush() {
	if d.tw != nil {
		_ = d.tw.Flush()
	}
}

// decodeEngineMetric decodes one line of engine_metrics.jsonl into m.
func (d *jsonLine) decodeEngineMetric(line []byte, m *record.EngineMetric) *LineError {
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

// tokenTimes looks for the token_times member of a request line: it walks
// the top-level object and reports the bounds [lo, hi) of the member's
// value when there is exactly one member named exactly "token_times"
// (no other spelling that would match it case-insensitively), its value is
// a non-empty array of JSON numbers at least as long as "null", and the
// line is one object. The numbers are in d.times (see numberArray). false: decode the line the
// general way.
func (d *jsonLine) tokenTimes(line []byte) (lo, hi int, ok bool) {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return 0, 0, false
	}
	i++
	found := false
	for {
		i = skipSpace(line, i)
		if i == len(line) {
			return 0, 0, false
		}
		if line[i] == '}' && !found {
			return 0, 0, false // empty object, or no member after a comma
		}
		if line[i] != '"' {
			return 0, 0, false
		}
		end := bytes.IndexByte(line[i+1:], '"')
		if end < 0 {
			return 0, 0, false
		}
		key := line[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return 0, 0, false // an escaped name might spell token_times
		}
		i = skipSpace(line, i+end+2)
		if i == len(line) || line[i] != ':' {
			return 0, 0, false
		}
		i = skipSpace(line, i+1)
		switch {
		case string(key) == "token_times":
			if found {
				return 0, 0, false
			}
			found = true
			lo = i
			if i, ok = d.numberArray(line, i); !ok {
				return 0, 0, false
			}
			hi = i
		case strings.EqualFold(string(key), "token_times"):
			return 0, 0, false
		default:
			if i, ok = skipValue(line, i); !ok {
				return 0, 0, false
			}
		}
		i = skipSpace(line, i)
		if i == len(line) {
			return 0, 0, false
		}
		switch line[i] {
		case ',':
			i++
			continue
		case '}':
			if skipSpace(line, i+1) != len(line) {
				return 0, 0, false
			}
			return lo, hi, found && hi-lo >= len("null")
		}
		return 0, 0, false
	}
}

// numberArray decodes the array of JSON numbers at line[i] with
// parseNumber into the end of d.slab, and sets d.times to that stretch
// (capped at its length); it returns the index after the array. false
// when it is not a non-empty array of numbers that float64 holds (the line
// then goes the general way, and any error is the library's); the slab's
// space is then given back.
func (d *jsonLine) numberArray(line []byte, i int) (int, bool) {
	if i == len(line) || line[i] != '[' {
		return 0, false
	}
	start := len(d.slab)
	for i++; ; i++ {
		i = skipSpace(line, i)
		v, next, ok := parseNumberAfter(line, i, &d.second)
		if !ok {
			break
		}
		if len(d.slab) == cap(d.slab) {
			// A new slab, the list so far moved to its start.
			n := len(d.slab) - start
			slab := make([]float64, n, max(slabFloats, 2*n))
			copy(slab, d.slab[start:])
			d.slab, start = slab, 0
		}
		d.slab = append(d.slab, v)
		i = skipSpace(line, next)
		if i == len(line) {
			break
		}
		switch line[i] {
		case ',':
			continue
		case ']':
			d.times = d.slab[start:len(d.slab):len(d.slab)]
			return i + 1, true
		}
		break
	}
	d.slab = d.slab[:start]
	return 0, false
}

func skipSpace(line []byte, i int) int {
	for i < len(line) && isJSONSpace(line[i]) {
		i++
	}
	return i
}

// skipValue returns the index after the value at line[i], judging only its
// extent (strings and brackets); the library checks the rest.
func skipValue(line []byte, i int) (int, bool) {
	depth := 0
	for i < len(line) {
		switch c := line[i]; c {
		case '"':
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(line) {
				return 0, false
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			if depth == 0 && isJSONSpace(c) {
				return i, true
			}
			i++
		}
		if depth == 0 && i < len(line) && (line[i-1] == '"' || line[i-1] == '}' || line[i-1] == ']') {
			return i, true
		}
	}
	return i, depth == 0
}
