package openai

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/joulebench/joulebench/internal/jsonenc"
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
			dst = jsonenc.String(dst, k, true)
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
			dst = jsonenc.String(dst, m.Role, true)
			dst = append(dst, `,"content":`...)
			dst = jsonenc.String(dst, m.Content, true)
			dst = append(dst, '}')
		}
		return append(dst, ']'), nil
	case "model":
		return jsonenc.String(dst, r.Model, true), nil
	case "prompt":
		return jsonenc.String(dst, p.CompletionText(), true), nil
	case "stream_options":
		return append(dst, `{"include_usage":true}`...), nil
	case "temperature":
		return jsonenc.Float(dst, r.Temperature)
	}
	return dst, errors.New("unknown body member " + k)
}
