package openai

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/joulebench/joulebench/engines/internal/chunkset"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
)

// chunkInfo is what one streamed chunk (or a whole non-streamed response)
// says, as far as the measurement needs it.
type chunkInfo struct {
	contentChars   int    // characters of choices[].delta.content, .message.content or .text
	reasoningChars int    // characters of delta.reasoning_content / delta.reasoning
	finished       bool   // some choice has a non-null finish_reason
	textHash       uint64 // hash of the choices' text, delta and message values (chunkset)

	hasUsage bool
	usage    usage

	// model is the raw "model" string when the chunk was parsed from its
	// start (nil when its prefix was the one remembered, which named the
	// same model): it points into the chunk, valid until the next read.
	model []byte

	// Rare, allocating parts.
	timings map[string]float64 // llama.cpp "timings"
	errMsg  string             // an error object sent in the stream
}

type usage struct {
	promptTokens     int
	completionTokens int
	reasoningTokens  int
	// frac holds a count that is not a whole number (3.7: no count, it
	// reads as 0 and the record fails), by countNames; 0 when whole.
	frac [3]float64
	// cachedTokens is usage.prompt_tokens_details.cached_tokens (vLLM,
	// SGLang, llama.cpp): prompt tokens served from the prefix cache.
	cachedTokens int
}

// countNames name the counts of usage.frac.
var countNames = [3]string{"prompt_tokens", "completion_tokens", "reasoning_tokens"}

// notWhole names the first count that is not a whole number, with its
// value ("completion_tokens 3.7"); "" when all are.
func (u *usage) notWhole() string {
	for i, f := range u.frac {
		if f != 0 {
			return countNames[i] + " " + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return ""
}

// parseChunk reads the fields joulebench needs from one chunk of an OpenAI
// stream (chat.completion.chunk or text_completion) without allocating:
// strings are not decoded, only their characters counted. Unknown members
// are skipped. It accepts every valid JSON document and some invalid ones
// (it does not check what it skips beyond its structure).
func parseChunk(b []byte, out *chunkInfo) error { return parseChunkMemo(b, out, nil) }

// chunkMemo remembers the start of the last chunk parsed, up to its first
// member that says something (choices, usage, ...): the members before it
// (id, object, created, model, system_fingerprint) are the same bytes in
// every chunk of a stream, and bytes that are the same parse the same.
//
// It also remembers the chunk's shape when its only text is one content
// string: a chunk that differs from it only inside that string (the next
// token of the stream, as a server sends it) says the same, but for the
// string's characters and the text hash, which are all that is worked out.
type chunkMemo struct {
	prefix        []byte // the chunk's bytes up to the key of that member; nil: none
	isErrorObject bool   // what the prefix said
	afterComma    bool   // the prefix ends after a member's comma: a key must follow

	shape     []byte    // the whole chunk; nil: no shape
	shapeInfo chunkInfo // what it said
	content   [2]int    // its content string token, [start, end)
	deltaEnd  int       // the end of the hashed delta (or message) value
	// headHash is the text hash of the delta's bytes before the content
	// string (FNV-1a is a running hash: the rest is folded in from there).
	headHash uint64
}

// afterComma reports whether b ends with a comma and whitespace.
func afterComma(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		case ',':
			return true
		default:
			return false
		}
	}
	return false
}

// sameShape parses b from the remembered shape, and reports whether it
// could: b must be the shape with another string in place of the content
// string (a string that the scanner accepts).
func (m *chunkMemo) sameShape(b []byte, out *chunkInfo) bool {
	if len(m.shape) == 0 {
		return false
	}
	pre, suf := m.shape[:m.content[0]], m.shape[m.content[1]:]
	if len(b) < len(pre)+len(suf)+2 || string(b[:len(pre)]) != string(pre) || string(b[len(b)-len(suf):]) != string(suf) {
		return false
	}
	chars, ok := plainString(b[len(pre) : len(b)-len(suf)])
	if !ok {
		mid := scanner{b: b[len(pre) : len(b)-len(suf)]}
		raw, ok := mid.str()
		if !ok || mid.i != len(mid.b) {
			return false
		}
		chars = jsonStringChars(raw)
	}
	*out = m.shapeInfo
	out.contentChars = chars
	out.textHash = chunkset.Mix(m.headHash, b[len(pre):len(b)-(len(m.shape)-m.deltaEnd)])
	return true
}

// matchEvent reads the SSE event at the start of buf when it is a chunk of
// the remembered shape whose content string is plain ASCII (a stream's
// next token, as servers send it): "data: ", the chunk, "\n", and the
// blank line's "\n" when it is there. It fills out as parseChunkMemo
// would and returns the bytes the event takes, or 0 when buf does not
// start with such an event (the line is then read and parsed as any
// other). It spares the line's search for its newline: the shape says
// where the chunk ends.
func (m *chunkMemo) matchEvent(buf []byte, out *chunkInfo) int {
	const data = "data: "
	pre, suf := m.shape[:m.content[0]], m.shape[m.content[1]:]
	if len(buf) < len(data)+len(pre)+2+len(suf)+1 || string(buf[:len(data)]) != data ||
		string(buf[len(data):len(data)+len(pre)]) != string(pre) {
		return 0
	}
	rest := buf[len(data)+len(pre):]
	if rest[0] != '"' {
		return 0
	}
	end := 1 // the closing quote
	for ; end < len(rest); end++ {
		c := rest[end]
		if c == '"' {
			break
		}
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return 0
		}
	}
	tail := rest[min(end+1, len(rest)):]
	if len(tail) < len(suf)+1 || string(tail[:len(suf)]) != string(suf) || tail[len(suf)] != '\n' {
		return 0
	}
	*out = m.shapeInfo
	out.contentChars = end - 1
	out.textHash = chunkset.Mix(chunkset.Mix(m.headHash, rest[:end+1]), suf[:m.deltaEnd-m.content[1]])
	n := len(buf) - len(tail) + len(suf) + 1
	if n < len(buf) && buf[n] == '\n' {
		n++
	}
	return n
}

// plainString reports whether b is a JSON string token of printable
// ASCII without escapes (most tokens), and its characters: one pass where
// the scanner and jsonStringChars take two. Anything else is left to them.
func plainString(b []byte) (int, bool) {
	n := len(b)
	if n < 2 || b[0] != '"' || b[n-1] != '"' {
		return 0, false
	}
	for _, c := range b[1 : n-1] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return 0, false
		}
	}
	return n - 2, true
}

// remember keeps b's shape when the scan says it has one: one text member
// in all, a delta or message whose only text is one content string.
func (m *chunkMemo) remember(b []byte, s *scanner, info *chunkInfo) {
	if s.err != nil || s.texts != 1 || s.contents != 1 || info.reasoningChars != 0 || info.hasUsage || info.timings != nil || info.errMsg != "" {
		m.shape = m.shape[:0]
		return
	}
	m.shape = append(m.shape[:0], b...)
	m.shapeInfo = *info
	m.shapeInfo.model = nil // its prefix is the same bytes: the same model
	m.content = s.content
	m.deltaEnd = s.delta1
	m.headHash = chunkset.Mix(chunkset.Seed, b[s.delta0:m.content[0]])
}

// parseChunkMemo is parseChunk that skips the start of b when it is the
// start memo holds (nil: no memo), and remembers b's.
func parseChunkMemo(b []byte, out *chunkInfo, memo *chunkMemo) error {
	if memo != nil && memo.sameShape(b, out) {
		return nil
	}
	*out = chunkInfo{}
	s := scanner{b: b}
	var isErrorObject bool
	var message []byte
	prefixEnd := -1
	resume := false // at a key, as after a member's comma
	if memo != nil && len(memo.prefix) > 0 && len(b) > len(memo.prefix) && string(b[:len(memo.prefix)]) == string(memo.prefix) {
		s.i, isErrorObject, prefixEnd, resume = len(memo.prefix), memo.isErrorObject, len(memo.prefix), memo.afterComma
	} else if !s.enter('{') {
		return s.fail("want an object")
	}
	for resume || s.more('}') {
		resume = false
		start := s.i
		key := s.key()
		switch string(key) {
		case "object", "id", "created", "model", "system_fingerprint", "service_tier":
		default:
			if prefixEnd < 0 {
				prefixEnd = start
				if memo != nil && s.err == nil {
					memo.prefix = append(memo.prefix[:0], b[:start]...)
					memo.isErrorObject = isErrorObject
					memo.afterComma = afterComma(b[:start])
				}
			}
		}
		switch string(key) {
		case "choices":
			s.choices(out)
		case "usage":
			s.usage(out)
		case "timings":
			start := s.i
			s.skip()
			if s.err == nil {
				out.timings = decodeTimings(b[start:s.i])
			}
		case "error":
			start := s.i
			s.skip()
			if s.err == nil {
				out.errMsg = errorMessage(b[start:s.i])
			}
		case "object":
			if raw, ok := s.str(); ok {
				isErrorObject = string(raw) == "error"
			} else {
				s.skip()
			}
		case "message":
			if raw, ok := s.str(); ok {
				message = raw
			} else {
				s.skip()
			}
		case "model":
			if raw, ok := s.str(); ok {
				out.model = raw
			} else {
				s.skip()
			}
		default:
			s.skip()
		}
	}
	s.ws()
	if s.err == nil && s.i != len(s.b) {
		s.fail("data after the object")
	}
	if memo != nil {
		if s.err != nil || prefixEnd < 0 {
			memo.prefix = memo.prefix[:0] // remember only what parsed
		}
		memo.remember(b, &s, out)
	}
	if isErrorObject && out.errMsg == "" {
		// vLLM's ErrorResponse: {"object": "error", "message": "...", ...}
		out.errMsg = "error"
		if message != nil {
			out.errMsg = unquote(message)
		}
	}
	return s.err
}

// choices reads the choices array. Like encoding/json, a member repeated
// in one object counts once, with its last value.
func (s *scanner) choices(out *chunkInfo) {
	out.contentChars, out.reasoningChars, out.finished = 0, 0, false
	out.textHash = chunkset.Seed
	if s.null() {
		return
	}
	if !s.enter('[') {
		s.fail("choices: want an array")
		return
	}
	for s.more(']') {
		if s.null() {
			continue
		}
		if !s.enter('{') {
			s.fail("choices: want objects")
			return
		}
		var text int
		var delta, message [2]int // content, reasoning
		finished := false
		for s.more('}') {
			switch key := s.key(); string(key) {
			case "text":
				start := s.i
				text = s.strChars()
				out.textHash = chunkset.Mix(out.textHash, s.b[start:s.i])
				s.texts++
			case "delta":
				start := s.i
				delta = s.delta()
				out.textHash = chunkset.Mix(out.textHash, s.b[start:s.i])
				s.texts++
				s.delta0, s.delta1 = start, s.i
			case "message":
				start := s.i
				message = s.delta()
				out.textHash = chunkset.Mix(out.textHash, s.b[start:s.i])
				s.texts++
				s.delta0, s.delta1 = start, s.i
			case "finish_reason":
				finished = !s.null()
				if finished {
					s.skip()
				}
			default:
				s.skip()
			}
		}
		out.contentChars += text + delta[0] + message[0]
		out.reasoningChars += delta[1] + message[1]
		out.finished = out.finished || finished
	}
}

// delta reads a delta or message object and returns the characters of its
// content and of its reasoning text.
func (s *scanner) delta() (chars [2]int) {
	if s.null() {
		return chars
	}
	if !s.enter('{') {
		s.fail("delta: want an object")
		return chars
	}
	// Some servers send the reasoning text under both names; count it once.
	var rc, r int
	for s.more('}') {
		switch key := s.key(); string(key) {
		case "content":
			s.ws()
			start := s.i
			chars[0] = s.strChars()
			if s.err == nil && start < s.i && s.b[start] == '"' {
				s.contents++
				s.content = [2]int{start, s.i}
			}
		case "reasoning_content":
			rc = s.strChars()
		case "reasoning":
			r = s.strChars()
		default:
			s.skip()
		}
	}
	chars[1] = max(rc, r)
	return chars
}

func (s *scanner) usage(out *chunkInfo) {
	out.hasUsage, out.usage = false, usage{}
	if s.null() {
		return
	}
	if !s.enter('{') {
		s.fail("usage: want an object")
		return
	}
	out.hasUsage = true
	for s.more('}') {
		switch key := s.key(); string(key) {
		case "prompt_tokens":
			out.usage.promptTokens = s.count(&out.usage.frac[0])
		case "completion_tokens":
			out.usage.completionTokens = s.count(&out.usage.frac[1])
		case "prompt_tokens_details":
			out.usage.cachedTokens = s.cachedTokens()
		case "completion_tokens_details":
			out.usage.reasoningTokens, out.usage.frac[2] = 0, 0
			if s.null() {
				continue
			}
			if !s.enter('{') {
				s.fail("completion_tokens_details: want an object")
				return
			}
			for s.more('}') {
				if string(s.key()) == "reasoning_tokens" {
					out.usage.reasoningTokens = s.count(&out.usage.frac[2])
				} else {
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
}

// decodeTimings keeps the numeric members of llama.cpp's "timings".
func decodeTimings(raw []byte) map[string]float64 {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	var out map[string]float64
	for k, v := range m {
		if f, ok := v.(float64); ok {
			if out == nil {
				out = make(map[string]float64, len(m))
			}
			out[k] = f
		}
	}
	return out
}

// errorMessage words an "error" member: an object with a message, or a
// string.
func errorMessage(raw []byte) string {
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &obj) == nil && (obj.Message != "" || obj.Type != "") {
		if obj.Message == "" {
			return obj.Type
		}
		return obj.Message
	}
	var str string
	if json.Unmarshal(raw, &str) == nil && str != "" {
		return str
	}
	return truncate(string(raw), maxErrorBody)
}

func unquote(raw []byte) string {
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// scanner walks JSON in place. Every method is a no-op once err is set.
type scanner struct {
	b   []byte
	i   int
	err error

	// The text members met (text, delta, message values hashed), the
	// content strings met in a delta or message, and the spans of the
	// last of each (for chunkMemo).
	texts, contents int
	delta0, delta1  int
	content         [2]int
}

func (s *scanner) fail(what string) error {
	if s.err == nil {
		s.err = errors.New("invalid chunk at byte " + strconv.Itoa(s.i) + ": " + what)
	}
	return s.err
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// enter consumes an opening '{' or '['.
func (s *scanner) enter(c byte) bool {
	if s.err != nil {
		return false
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// more reports whether another member or element follows, consuming the
// separating comma; at the closing byte it consumes it and returns false.
func (s *scanner) more(closing byte) bool {
	if s.err != nil {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		s.fail("unexpected end")
		return false
	}
	switch s.b[s.i] {
	case closing:
		s.i++
		return false
	case ',':
		s.i++
		s.ws()
	}
	return true
}

// key reads a member name and the colon after it.
func (s *scanner) key() []byte {
	k, ok := s.str()
	if !ok {
		s.fail("want a member name")
		return nil
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		s.fail("want ':'")
		return nil
	}
	s.i++
	return k
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.err != nil {
		return false
	}
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string and returns its raw bytes between the quotes.
func (s *scanner) str() ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '\\':
			j++
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c < 0x20:
			s.fail("control character in string")
			return nil, false
		}
	}
	s.fail("unterminated string")
	return nil, false
}

// strChars reads a string or null and returns the number of characters
// (runes) the string decodes to.
func (s *scanner) strChars() int {
	if s.null() {
		return 0
	}
	raw, ok := s.str()
	if !ok {
		s.fail("want a string")
		return 0
	}
	return jsonStringChars(raw)
}

// count reads a token count (or null, as 0). A number that is not whole
// (3.7) is no count: it reads as 0 and goes to *frac, for the record to
// fail; never truncated. A whole one sets *frac to 0 (a member repeated
// counts with its last value).
func (s *scanner) count(frac *float64) int {
	*frac = 0
	if s.null() {
		return 0
	}
	start := s.i
	s.number()
	if s.err != nil {
		return 0
	}
	raw := s.b[start:s.i]
	n := 0
	for i, c := range raw {
		if c < '0' || c > '9' {
			// Rare: a fraction, an exponent or a sign.
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil {
				s.fail("bad number")
				return 0
			}
			if f != math.Trunc(f) {
				*frac = f
				return 0
			}
			return streamcore.ClampInt(f)
		}
		if i >= 18 {
			return math.MaxInt // absurd, never wrapped round
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func (s *scanner) number() {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
		default:
			if s.i == start {
				s.fail("want a number")
			}
			return
		}
	}
	if s.i == start {
		s.fail("want a number")
	}
}

// skip consumes one value of any kind.
func (s *scanner) skip() {
	if s.err != nil {
		return
	}
	s.ws()
	if s.i >= len(s.b) {
		s.fail("unexpected end")
		return
	}
	switch c := s.b[s.i]; c {
	case '"':
		s.str()
	case '{':
		s.i++
		for s.more('}') {
			s.key()
			s.skip()
		}
	case '[':
		s.i++
		for s.more(']') {
			s.skip()
		}
	case 't', 'f', 'n':
		for s.i < len(s.b) && s.b[s.i] >= 'a' && s.b[s.i] <= 'z' {
			s.i++
		}
	default:
		s.number()
	}
}

// jsonStringChars counts the characters a raw JSON string body decodes
// to, the way encoding/json decodes it: an escape is one character, a
// surrogate pair one, a lone surrogate or an invalid UTF-8 byte one (U+FFFD).
func jsonStringChars(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c < utf8.RuneSelf && c != '\\':
			i++
		case c == '\\':
			if i+1 < len(raw) && raw[i+1] == 'u' && i+6 <= len(raw) {
				r := hex4(raw[i+2 : i+6])
				i += 6
				if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := hex4(raw[i+2 : i+6]); r2 >= 0xDC00 && r2 < 0xE000 {
						i += 6
					}
				}
			} else {
				i += 2
			}
		default:
			_, size := utf8.DecodeRune(raw[i:])
			i += size
		}
		n++
	}
	return n
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// cachedTokens reads prompt_tokens_details and returns its cached_tokens
// (0 when absent, null or not a whole number).
func (s *scanner) cachedTokens() int {
	if s.null() {
		return 0
	}
	if !s.enter('{') {
		s.fail("prompt_tokens_details: want an object")
		return 0
	}
	n := 0
	for s.more('}') {
		if string(s.key()) == "cached_tokens" {
			var frac float64
			n = s.count(&frac)
		} else {
			s.skip()
		}
	}
	return n
}
