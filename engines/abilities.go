package engines

import "context"

// Optional abilities of an engine beyond Engine. Callers ask for them with
// a type assertion on these named interfaces; implementers check them at
// compile time (var _ engines.MetricsSource = (*Engine)(nil)).

// MetricsSource is an engine with a Prometheus endpoint.
type MetricsSource interface {
	// MetricsURL is the /metrics URL ("" when the engine has none).
	MetricsURL() string
}

// Externaler is an engine joulebench neither starts nor stops.
type Externaler interface {
	External() bool
}

// Expecter is an engine that knows which identity it should report.
type Expecter interface {
	Expect() Identity
}

// ExitReporter is an engine that can say why it exited on its own (status
// and the tail of its log).
type ExitReporter interface {
	ExitError() error
}

// ExitStatuser is an engine that reports its process's exit status once
// it exited ("" before).
type ExitStatuser interface {
	ExitStatus() string
}

// RunInfoSetter records run settings an engine reports in its Info.
type RunInfoSetter interface {
	SetRunInfo(thinking, requestAPI string)
}

// ModelNamer is an engine that knows the model id requests must carry
// (the served name, an alias, the Ollama model name).
type ModelNamer interface {
	RequestModel() string
}

// Tokenizer is an engine whose server counts the tokens of a text with the
// served model's own tokenizer (llama.cpp, vLLM and SGLang answer POST
// /tokenize), the count of that text sent as a completions prompt.
type Tokenizer interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// ModelResolver is an already running server that can say which model to
// request when none was given (the first it lists, or its kind's choice),
// and be told it.
type ModelResolver interface {
	ResolveModel(ctx context.Context) (string, error)
	SetModel(model string)
}

// FamiliesDefaulter is an engine whose default /metrics families depend
// on what it runs (an engine pod: the simulator's or a real engine's),
// over its kind's.
type FamiliesDefaulter interface {
	DefaultFamilies() []string
}
