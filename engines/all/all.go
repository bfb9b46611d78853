// Package all is the registry of joulebench's built-in engines and how a
// run's engine is built from a registry (launch.go): the one engine
// package the run library imports. Adding an engine is one package that
// exports its engines.Descriptor and one line here. The kubernetes kind
// is the real one (package engines/kube, client-go) only in a build with
// the kubernetes tag (joulebench-kube); elsewhere it is listed with its
// flags and refused when used (kubeflags.Unavailable).
package all

import (
	"fmt"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/engines/vllm"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Default is the engine of a run that names none: the simulator.
const Default = sim.Kind

// Descriptors are the built-in engines in the order help texts list them.
func Descriptors() []engines.Descriptor {
	return []engines.Descriptor{
		vllm.Descriptor(),
		sglang.Descriptor(),
		llamacpp.Descriptor(),
		ollama.Descriptor(),
		external.Descriptor(),
		sim.Descriptor(),
		kubernetes(),
	}
}

// Registry returns a new registry of the built-in engines.
func Registry() *engines.Registry {
	r := engines.NewRegistry()
	for _, d := range Descriptors() {
		if err := r.Register(d); err != nil {
			// The built-ins are fixed at compile time; a test registers them.
			panic(fmt.Sprintf("built-in engines: %v", err))
		}
	}
	return r
}

// Clients are the request clients by the API they speak (engines.APIOpenAI,
// engines.APIOllama): the client of a run is Clients()[api].
func Clients() map[string]engines.NewClientFunc {
	return map[string]engines.NewClientFunc{
		engines.APIOpenAI: newOpenAIClient,
		engines.APIOllama: newOllamaClient,
	}
}

// newOpenAIClient is the OpenAI streaming client; a thinking setting goes
// in chat_template_kwargs.enable_thinking.
func newOpenAIClient(c engines.ClientConfig) engines.Client {
	opts := []openai.Option{openai.WithClock(c.Clock), openai.WithRecordTokenTimes(true),
		openai.WithHTTPClient(c.HTTP), openai.WithAPIKey(c.APIKey), openai.WithRunID(c.RunID)}
	if c.Think != nil {
		opts = append(opts, openai.WithExtra(map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": *c.Think}}))
	}
	return openai.NewClient(c.BaseURL, opts...)
}

// newOllamaClient is Ollama's native client; the seed and the context
// length go in every request's options, a thinking setting as think.
func newOllamaClient(c engines.ClientConfig) engines.Client {
	o := map[string]any{"seed": c.Seed}
	if c.MaxModelLen > 0 {
		o["num_ctx"] = c.MaxModelLen
	}
	opts := []ollama.Option{ollama.WithClock(c.Clock), ollama.WithRecordTokenTimes(true),
		ollama.WithHTTPClient(c.HTTP), ollama.WithAPIKey(c.APIKey), ollama.WithOptions(o)}
	if c.Think != nil {
		opts = append(opts, ollama.WithThink(*c.Think))
	}
	return ollama.NewClient(c.BaseURL, opts...)
}

// SimGPUConfig is the configuration of the simulated GPUs a simulated run
// with the engine settings s gets, before its engine is built (its GPU
// settings are checked against their range): the hardware preset's
// boards (--sim-gpu, --sim-model), else the toy model's.
func SimGPUConfig(s engines.Settings, seed int64) (simtel.Config, error) {
	return sim.GPUConfigFor(s, seed)
}
