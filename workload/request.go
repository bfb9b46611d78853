package workload

import "strings"

// Request is one request to send to an inference engine, whatever its API:
// a prompt of a frozen set (or a warm-up prompt) with the run's model and
// sampling settings. It is the neutral type between the load generator,
// which schedules requests, and the engine clients (OpenAI-compatible,
// Ollama's native API), which encode them; the record of a finished request
// is record.Request.
type Request struct {
	ID       string
	Phase    string
	PromptID string
	Model    string
	// Prompt is the text of a completions request; a chat request with no
	// Messages sends it as one user message.
	Prompt   string
	Messages []Message
	// MaxTokens is sent as max_tokens when > 0.
	MaxTokens   int
	Temperature float64
	// IgnoreEOS sends ignore_eos=true (vLLM, SGLang) when set.
	IgnoreEOS bool
	// Chat selects the chat endpoint; otherwise the completions one.
	Chat bool
	// Extra members are added to the JSON body and override the ones
	// above (except "stream", which is always true).
	Extra map[string]any
	// Answer, when not nil, receives the answer text (not the reasoning)
	// as it streams: a multi-turn conversation sends it back in the next
	// turn. Engine clients that cannot capture it leave it empty.
	Answer *strings.Builder
}
