package ollama

import (
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// answerLine records what a streamed line says of the answer (its
// response or message content, not its thinking): the first answer's time
// once the model has been thinking, and the answer text into b when the
// request asks for it (a conversation's turn).
func answerLine(rec *record.Request, b *strings.Builder, l line, thinking bool, now float64) {
	text := l.Response
	if l.Message != nil {
		text += l.Message.Content
	}
	if text == "" {
		return
	}
	if thinking && rec.FirstAnswerAt == 0 {
		rec.FirstAnswerAt = now
	}
	if b != nil {
		b.WriteString(text)
	}
}
