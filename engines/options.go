package engines

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
)

// Common are the options every managed engine starts from, declared once:
// engines.Options, all.Spec and each engine's own Config embed them.
// Each engine reads the fields it has a use for (Descriptor.Flags names
// the flags it accepts).
type Common struct {
	// Bin replaces the engine's executable (vllm, python for SGLang,
	// llama-server, ollama).
	Bin string
	// Args are extra command-line arguments; Env environment overrides
	// (they win over the engine's own variables).
	Args []string
	Env  map[string]string
	// Model is the model id (its meaning is the engine's: a path or
	// Hugging Face id, also the served name, for vLLM and SGLang; the
	// alias, default the file name, for llama.cpp; the model name for
	// Ollama).
	Model string
	// ModelFile is a GGUF file (llama.cpp; Ollama creates the model from
	// it when missing).
	ModelFile string
	// Revision is the model revision (commit) when the engine takes one.
	Revision string
	// Port on 127.0.0.1 (0: a free one).
	Port int
	// TP is the tensor-parallel size (vLLM, SGLang).
	TP int
	// MaxModelLen is the longest request in tokens (vLLM --max-model-len,
	// SGLang --context-length, llama.cpp context per slot, Ollama
	// OLLAMA_CONTEXT_LENGTH and num_ctx); 0: the engine's default.
	MaxModelLen int
	// Slots is the number of requests served at once (llama.cpp's -np,
	// Ollama's OLLAMA_NUM_PARALLEL).
	Slots int
	Seed  int64
	// Log receives the engine's output (engine.log).
	Log  io.Writer
	HTTP *http.Client
}

// Setting is an engine-specific option, declared by the descriptor of
// the kind that reads it, with the flag that sets it and its help.
type Setting struct {
	// Flag is the flag's name (without "--"), also the key in Settings.
	Flag string
	// Doc is the flag's help; the values' own help follows it (Help).
	Doc string
	// Values are the values accepted besides "" (no value); nil: the
	// setting is a boolean ("true" or "false").
	Values []Value
	// Default is the flag's default value ("": none), one of Values.
	Default string
	// Free is true for a setting whose value is free text (a file, a
	// namespace): any value is accepted; Values is nil and it is not a
	// boolean.
	Free bool
}

// Value is one value a Setting accepts, with what it does ("": nothing
// to say beyond its name).
type Value struct {
	Name, Doc string
}

// Help is the flag's help text: Doc, then each value with its own help
// ("doc: a (what a does) or b (what b does)").
func (st Setting) Help() string {
	var vs []string
	for _, v := range st.Values {
		if v.Doc != "" {
			vs = append(vs, v.Name+" ("+v.Doc+")")
		}
	}
	if len(vs) == 0 {
		return st.Doc
	}
	return st.Doc + ": " + orList(vs)
}

// names are the names of the accepted values.
func (st Setting) names() []string {
	out := make([]string, len(st.Values))
	for i, v := range st.Values {
		out[i] = v.Name
	}
	return out
}

// Settings are the values of engine-specific options by flag name, as
// the command line gave them ("true" or "false" for a boolean).
type Settings map[string]string

// Bool reports whether the boolean setting flag is on.
func (s Settings) Bool(flag string) bool { return s[flag] == "true" }

// check reports a value st does not accept.
func (st Setting) check(v string) error {
	if v == "" || st.Free {
		return nil
	}
	if st.Values == nil {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("--%s %q: want true or false", st.Flag, v)
		}
		return nil
	}
	if !slices.Contains(st.names(), v) {
		return fmt.Errorf("--%s %q: want %s", st.Flag, v, orList(st.names()))
	}
	return nil
}

// Settings collects the value of every engine-specific option that a kind
// of r declares, read by get (a flag's value by its name).
func (r *Registry) Settings(get func(flag string) string) Settings {
	s := Settings{}
	for _, k := range r.order {
		for _, st := range r.byKind[k].Settings {
			s[st.Flag] = get(st.Flag)
		}
	}
	return s
}

// Declared are the engine-specific options of every kind of r, in
// registration order: the flags a command line offers for them.
func (r *Registry) Declared() []Setting {
	var out []Setting
	seen := map[string]bool{}
	for _, k := range r.order {
		for _, st := range r.byKind[k].Settings {
			if !seen[st.Flag] {
				seen[st.Flag] = true
				out = append(out, st)
			}
		}
	}
	return out
}

// CheckSettings reports the first value of s that the kind declaring its
// setting does not accept (in registration order); a setting no kind
// declares is an error too.
func (r *Registry) CheckSettings(s Settings) error {
	seen := map[string]bool{}
	for _, k := range r.order {
		for _, st := range r.byKind[k].Settings {
			if v, ok := s[st.Flag]; ok && !seen[st.Flag] {
				seen[st.Flag] = true
				if err := st.check(v); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(s)) {
		if !seen[f] {
			return fmt.Errorf("--%s: no engine takes it", f)
		}
	}
	return nil
}
