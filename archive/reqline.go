package archive

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/jsonenc"
)

// appendRequestLine appends r as one line of requests.jsonl, newline
// included: the bytes an encoding/json Encoder without HTML escaping
// writes for it (members in the order of Request's fields, omitempty as
// tagged), written directly. A request streams thousands of token times,
// and this is the one JSON the run writes per token; encoding/json spends
// about 70 ns on each time, this about 12 (jsonenc.Floats).
// TestRequestLineIsEncodingJSON holds the two to the same bytes for every
// field, so a field added to Request must be added here too.
//
// A NaN or infinite number is an error naming the member, and dst is then
// returned as it was.
func appendRequestLine(dst []byte, r *record.Request) ([]byte, error) {
	b := dst
	var err error
	float := func(name string, v float64) {
		if err != nil {
			return
		}
		if b, err = jsonenc.Float(b, v); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
	}
	b = append(b, `{"id":`...)
	b = jsonenc.String(b, r.ID, false)
	b = append(b, `,"phase":`...)
	b = jsonenc.String(b, r.Phase, false)
	if r.PromptID != "" {
		b = append(b, `,"prompt_id":`...)
		b = jsonenc.String(b, r.PromptID, false)
	}
	b = append(b, `,"sent_at":`...)
	float("sent_at", r.SentAt)
	if r.FirstTokenAt != 0 {
		b = append(b, `,"first_token_at":`...)
		float("first_token_at", r.FirstTokenAt)
	}
	if r.DoneAt != 0 {
		b = append(b, `,"done_at":`...)
		float("done_at", r.DoneAt)
	}
	b = appendIntMember(b, `,"prompt_tokens":`, r.PromptTokens, true)
	b = appendIntMember(b, `,"output_tokens":`, r.OutputTokens, false)
	b = appendIntMember(b, `,"reasoning_tokens":`, r.ReasoningTokens, true)
	b = appendIntMember(b, `,"cached_prompt_tokens":`, r.CachedPromptTokens, true)
	if r.ConversationID != "" {
		b = append(b, `,"conversation_id":`...)
		b = jsonenc.String(b, r.ConversationID, false)
	}
	b = appendIntMember(b, `,"turn":`, r.Turn, true)
	if r.FirstAnswerAt != 0 {
		b = append(b, `,"first_answer_at":`...)
		float("first_answer_at", r.FirstAnswerAt)
	}
	if r.TokensSource != "" {
		b = append(b, `,"tokens_source":`...)
		b = jsonenc.String(b, r.TokensSource, false)
	}
	b = appendIntMember(b, `,"output_chars":`, r.OutputChars, true)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, r.OK)
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonenc.String(b, r.Error, false)
	}
	if r.TokenTimesLen() > 0 {
		b = append(b, `,"token_times":[`...)
		var ferr error
		if b, ferr = jsonenc.Floats(b, r.Times(nil)); ferr != nil {
			return dst, fmt.Errorf("token_times: %w", ferr)
		}
		b = append(b, ']')
	}
	if len(r.TokenCounts) > 0 {
		b = append(b, `,"token_counts":[`...)
		for i, n := range r.TokenCounts {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, ']')
	}
	if len(r.EngineTimings) > 0 {
		keys := make([]string, 0, len(r.EngineTimings))
		for k := range r.EngineTimings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"engine_timings":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.String(b, k, false)
			b = append(b, ':')
			float("engine_timings."+k, r.EngineTimings[k])
		}
		b = append(b, '}')
	}
	b = appendIntMember(b, `,"max_tokens":`, r.MaxTokens, true)
	if r.Engine != "" {
		b = append(b, `,"engine":`...)
		b = jsonenc.String(b, r.Engine, false)
	}
	b = appendIntMember(b, `,"distinct_chunks":`, r.DistinctChunks, true)
	if r.FirstTokenBounded {
		b = append(b, `,"first_token_bounded":true`...)
	}
	if r.FirstTokenBoundS != 0 {
		b = append(b, `,"first_token_bound_s":`...)
		float("first_token_bound_s", r.FirstTokenBoundS)
	}
	b = appendIntMember(b, `,"bounded_chunks":`, r.BoundedChunks, true)
	if r.Synthetic {
		b = append(b, `,"synthetic":true`...)
	}
	if r.SingleTokenChunks {
		b = append(b, `,"single_token_chunks":true`...)
	}
	if err != nil {
		return dst, err
	}
	return append(b, '}', '\n'), nil
}

// appendIntMember appends a member with an integer value (its name given
// with the comma and colon around it), or nothing when omitEmpty is set
// and v is 0.
func appendIntMember(b []byte, member string, v int, omitEmpty bool) []byte {
	if omitEmpty && v == 0 {
		return b
	}
	b = append(b, member...)
	return strconv.AppendInt(b, int64(v), 10)
}
