package workflow

import (
	"fmt"
	"sort"
)

// Validator is implemented by step configurations that check their
// parameters after decoding.
type Validator interface {
	Validate() error
}

// StepKind describes one kind of step a profile may name.
type StepKind struct {
	Name string
	Doc  string
	// NewConfig returns a pointer to a fresh parameter struct holding the
	// defaults; the profile's `with:` is decoded strictly into it.
	NewConfig func() any
}

// Registry holds the step kinds known to a loader. Build one per process
// (steps.Registry does) and pass it to Load; there is no global registry.
type Registry struct {
	kinds map[string]StepKind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]StepKind{}} }

// Register adds a step kind; a duplicate or empty name is an error.
func (r *Registry) Register(k StepKind) error {
	if k.Name == "" || k.NewConfig == nil {
		return fmt.Errorf("step kind needs a name and a config constructor")
	}
	if _, dup := r.kinds[k.Name]; dup {
		return fmt.Errorf("step kind %q registered twice", k.Name)
	}
	r.kinds[k.Name] = k
	return nil
}

// Lookup finds a step kind by name.
func (r *Registry) Lookup(name string) (StepKind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names lists the registered kinds, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
