package all_test

import (
	"slices"
	"testing"

	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/vllm"
)

func TestBuiltins(t *testing.T) {
	r := all.Registry()
	if got, want := r.Kinds(), []string{"vllm", "sglang", "llamacpp", "ollama", "openai", "sim", "kubernetes"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	if got, want := r.Startable(), []string{"vllm", "sglang", "llamacpp", "ollama", "sim", "kubernetes"}; !slices.Equal(got, want) {
		t.Errorf("startable %v, want %v", got, want)
	}
	if got, want := r.Attachable(), []string{"openai", "vllm", "sglang", "llamacpp", "ollama"}; !slices.Equal(got, want) {
		t.Errorf("attachable %v, want %v", got, want)
	}
	if d, ok := r.Lookup(all.Default); !ok || !d.Simulated {
		t.Errorf("the default engine %q is not the simulator", all.Default)
	}
	// A server of unknown kind keeps the families of every kind it may be.
	want := slices.Concat(vllm.DefaultFamilies(), sglang.DefaultFamilies(), llamacpp.DefaultFamilies())
	if got := r.Families(external.Kind); !slices.Equal(got, want) {
		t.Errorf("generic families %v, want %v", got, want)
	}
	for _, k := range r.Kinds() {
		d, _ := r.Lookup(k)
		if want := k == "sglang" || k == "ollama"; d.ReportsRevision != want {
			t.Errorf("%s: reports revision %v", k, d.ReportsRevision)
		}
		if d.Doc == "" {
			t.Errorf("%s: no doc", k)
		}
	}
}

// The built-ins name their server processes and Ollama's unload, which a
// generic server of the Ollama API also gets.
func TestProcessesAndUnloader(t *testing.T) {
	r := all.Registry()
	procs := r.ServerProcesses()
	for _, want := range []string{"ollama", "llama-server", "vllm", "sglang", "LM Studio"} {
		if !slices.Contains(procs, want) {
			t.Errorf("ServerProcesses() = %v, lacks %q", procs, want)
		}
	}
	if r.Unloader("ollama", "") == nil || r.Unloader("openai", "ollama") == nil {
		t.Error("no unloader for Ollama (by kind, or by API)")
	}
	if r.Unloader("vllm", "openai") != nil {
		t.Error("vLLM has no unload API, got one")
	}
}
