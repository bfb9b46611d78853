// Package engines holds the inference engines joulebench benchmarks (vLLM,
// SGLang, llama.cpp, Ollama, an already running OpenAI-compatible server,
// and the built-in simulator) behind one interface the executor drives.
package engines

import (
	"context"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// API names for Engine.API.
const (
	APIOpenAI = "openai"
	APIOllama = "ollama"
)

// Identity is what a running engine reports about itself, checked against
// the frozen configuration after startup (verify step).
type Identity struct {
	// Model is the served model id.
	Model string
	// Revision is the model revision (commit) when the engine says it.
	Revision string
	// EngineVersion is the engine's own version string.
	EngineVersion string
	// ContextLength is the maximum model length in tokens (0: unknown).
	ContextLength int
	// TensorParallel is the tensor-parallel size (0: unknown).
	TensorParallel int
	// Precision is the weights' dtype or quantization (zero: unknown):
	// what the engine serves in an identity, what was asked (the
	// engine's options, the model file, --precision) in an Expect.
	Precision Precision
	// Raw holds the decoded responses the identity came from, by endpoint.
	Raw map[string]any
}

// Engine is one inference service under test.
type Engine interface {
	// Kind is the engine kind: "vllm", "sglang", "llamacpp", "ollama",
	// "openai" (external), "sim".
	Kind() string
	// Simulated is true when nothing real runs (the sim engine).
	Simulated() bool
	// Start launches the engine and returns once the process or server is
	// started, not when it is ready. ctx bounds the launch only; the
	// engine runs until Stop (or until it exits on its own).
	Start(ctx context.Context) error
	// WaitReady blocks until the engine serves requests, it exits, ctx is
	// done or timeout passes (timeout <= 0: no limit besides ctx).
	WaitReady(ctx context.Context, timeout time.Duration) error
	// Identity queries the running engine for model, revision, version,
	// context length and parallel configuration.
	Identity(ctx context.Context) (Identity, error)
	// BaseURL is the server's root, e.g. http://127.0.0.1:PORT (empty
	// before Start for managed engines).
	BaseURL() string
	// API is APIOpenAI or APIOllama.
	API() string
	// Stop asks the engine to exit, forces it after grace, waits for the
	// exit and returns when it happened.
	Stop(ctx context.Context, grace time.Duration) (exitedAt time.Time, err error)
	// Exited is closed when the engine has exited, on its own or after Stop.
	Exited() <-chan struct{}
	// Info describes the engine for run.json.
	Info() record.EngineInfo
}

// DefaultTag is the tag Ollama gives a model name without one: "tiny" is
// served, and listed by its OpenAI-compatible /v1/models, as "tiny:latest".
const DefaultTag = ":latest"

// SameModel reports whether served is the model requested as want: the
// same id, or the same name with DefaultTag on one side only (Ollama's
// implicit tag). A name's tag follows the last ":" after its last "/"
// (a registry host's port is not a tag).
func SameModel(want, served string) bool {
	switch {
	case want == served:
		return true
	case want == "" || served == "":
		return false
	case !hasTag(want) && served == want+DefaultTag:
		return true
	}
	return !hasTag(served) && want == served+DefaultTag
}

// hasTag reports whether the model name carries a tag (":TAG" in its
// last path segment).
func hasTag(name string) bool {
	last := name[strings.LastIndex(name, "/")+1:]
	return strings.Contains(last, ":")
}
