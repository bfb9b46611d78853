package workflow

import (
	"context"
	"fmt"
	"sort"
)

// Validator is implemented by step configurations that check their
// parameters after decoding.
type Validator interface {
	Validate() error
}

// StepKind is one kind of step a profile may name, in one value: its name,
// its documentation, its `with:` configuration (a fresh struct holding the
// defaults, decoded strictly from the profile) and its run function. D is
// what the step implementations depend on (engine, telemetry, request
// sets...); the package that defines the kinds defines D. Build one with
// NewStepKind.
type StepKind[D any] struct {
	Name string
	Doc  string

	newConfig func() any
	run       func(ctx context.Context, rc *RunContext, deps D, cfg any) error
}

// NewStepKind ties a step kind's name and documentation to its typed
// configuration and its run function. defaults returns a fresh
// configuration holding the defaults; run receives the configuration the
// profile's `with:` decoded into one of those.
func NewStepKind[D, C any](name, doc string, defaults func() *C,
	run func(ctx context.Context, rc *RunContext, deps D, cfg *C) error) StepKind[D] {
	k := StepKind[D]{Name: name, Doc: doc}
	if defaults != nil {
		k.newConfig = func() any { return defaults() }
	}
	if run != nil {
		k.run = func(ctx context.Context, rc *RunContext, deps D, cfg any) error {
			c, ok := cfg.(*C)
			if !ok || c == nil {
				return fmt.Errorf("step kind %s: configuration is %T, want %T (was the profile loaded with this registry?)", name, cfg, c)
			}
			return run(ctx, rc, deps, c)
		}
	}
	return k
}

// NewConfig returns a fresh configuration holding the kind's defaults.
func (k StepKind[D]) NewConfig() any { return k.newConfig() }

// Run runs the step with cfg, a configuration made by NewConfig.
func (k StepKind[D]) Run(ctx context.Context, rc *RunContext, deps D, cfg any) error {
	return k.run(ctx, rc, deps, cfg)
}

// StepConfigs is what loading a profile needs of the step kinds: their
// names, and a fresh configuration of each to decode `with:` into.
// *Registry implements it.
type StepConfigs interface {
	Names() []string
	NewConfig(kind string) (any, bool)
}

// Registry holds the step kinds known to a run, over their dependencies D.
// Build one per process (steps.Registry does) and pass it to Load and
// Execute; there is no global registry.
type Registry[D any] struct {
	kinds map[string]StepKind[D]
}

var _ StepConfigs = (*Registry[struct{}])(nil)

// NewRegistry returns a registry holding kinds; a duplicate or incomplete
// kind is an error.
func NewRegistry[D any](kinds ...StepKind[D]) (*Registry[D], error) {
	r := &Registry[D]{kinds: map[string]StepKind[D]{}}
	for _, k := range kinds {
		if err := r.Register(k); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a step kind; a duplicate or empty name, or a kind without
// configuration or run function, is an error.
func (r *Registry[D]) Register(k StepKind[D]) error {
	if k.Name == "" || k.newConfig == nil || k.run == nil {
		return fmt.Errorf("step kind %q needs a name, a config constructor and a run function (use NewStepKind)", k.Name)
	}
	if _, dup := r.kinds[k.Name]; dup {
		return fmt.Errorf("step kind %q registered twice", k.Name)
	}
	r.kinds[k.Name] = k
	return nil
}

// Lookup finds a step kind by name.
func (r *Registry[D]) Lookup(name string) (StepKind[D], bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// NewConfig returns a fresh configuration of the named kind.
func (r *Registry[D]) NewConfig(kind string) (any, bool) {
	k, ok := r.kinds[kind]
	if !ok {
		return nil, false
	}
	return k.NewConfig(), true
}

// Names lists the registered kinds, sorted.
func (r *Registry[D]) Names() []string {
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
