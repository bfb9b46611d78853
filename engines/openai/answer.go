package openai

import (
	"encoding/json"
	"strings"
)

// answerChunk is the part of a chunk (or a whole response) that holds the
// answer text.
type answerChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// appendAnswer appends the answer text of one parsed chunk to b. It runs
// only for requests that ask for their answer (a conversation's turns),
// off the lean per-token path; a chunk that does not decode adds nothing
// (the stream's parser has already judged it).
func appendAnswer(b *strings.Builder, chunk []byte) {
	var c answerChunk
	if json.Unmarshal(chunk, &c) != nil {
		return
	}
	for _, ch := range c.Choices {
		b.WriteString(ch.Text)
		b.WriteString(ch.Delta.Content)
		b.WriteString(ch.Message.Content)
	}
}
