// Package all is the registry of joulebench's built-in engines. Adding an
// engine is one package that exports its engines.Descriptor and one line
// here.
package all

import (
	"fmt"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/engines/vllm"
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
