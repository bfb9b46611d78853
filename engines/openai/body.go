package openai

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/joulebench/joulebench/workload"
)

// appendBody appends r's request body to dst: the bytes json.Marshal
// gives for the body as a map (members sorted by name, HTML characters
// escaped as encoding/json does), written directly. Extra members replace
// the body's own of the same name, except "stream", which is always true.
func appendBody(dst []byte, r workload.Request) ([]byte, error) {
	var own [7]string // the body's own members, sorted by name
	n := 0
	if r.IgnoreEOS {
		own[n], n = "ignore_eos", n+1
	}
	if r.MaxTokens > 0 {
		own[n], n = "max_tokens", n+1
	}
	if r.Chat {
		own[n], n = "messages", n+1
	}
	if r.Model != "" {
		own[n], n = "model", n+1
	}
	if !r.Chat {
		own[n], n = "prompt", n+1
	}
	own[n], own[n+1], own[n+2], n = "stream", "stream_options", "temperature", n+3
	var extra []string
	if len(r.Extra) > 0 {
		extra = make([]string, 0, len(r.Extra))
		for k := range r.Extra {
			if k != "stream" {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
	}
	dst = append(dst, '{')
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	ownMembers := own[:n]
	for len(ownMembers) > 0 || len(extra) > 0 {
		if len(extra) > 0 && (len(ownMembers) == 0 || extra[0] <= ownMembers[0]) {
			k := extra[0]
			extra = extra[1:]
			if len(ownMembers) > 0 && ownMembers[0] == k {
				ownMembers = ownMembers[1:] // replaced
			}
			v, err := json.Marshal(r.Extra[k])
			if err != nil {
				return dst, err
			}
			sep()
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, v...)
			continue
		}
		k := ownMembers[0]
		ownMembers = ownMembers[1:]
		sep()
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		var err error
		if dst, err = appendOwnMember(dst, k, r); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendOwnMember appends the value of the body's own member k.
func appendOwnMember(dst []byte, k string, r workload.Request) ([]byte, error) {
	p := workload.Prompt{Prompt: r.Prompt, Messages: r.Messages}
	switch k {
	case "ignore_eos", "stream":
		return append(dst, "true"...), nil
	case "max_tokens":
		return strconv.AppendInt(dst, int64(r.MaxTokens), 10), nil
	case "messages":
		dst = append(dst, '[')
		for i, m := range p.ChatMessages() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = appendJSONString(dst, m.Role)
			dst = append(dst, `,"content":`...)
			dst = appendJSONString(dst, m.Content)
			dst = append(dst, '}')
		}
		return append(dst, ']'), nil
	case "model":
		return appendJSONString(dst, r.Model), nil
	case "prompt":
		return appendJSONString(dst, p.CompletionText()), nil
	case "stream_options":
		return append(dst, `{"include_usage":true}`...), nil
	case "temperature":
		return appendJSONFloat(dst, r.Temperature)
	}
	return dst, errors.New("unknown body member " + k)
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// appendJSONString appends s quoted as encoding/json quotes a string (with
// HTML escaping): <, > and & and control characters as \u00XX (but \b, \f,
// \n, \r, \t), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
