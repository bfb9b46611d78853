package engines

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Options is the engine-neutral configuration a managed engine starts
// from: what the run command's flags say. Each engine reads the fields it
// accepts (Descriptor.Flags) and the engine-specific settings it declares
// (Descriptor.Settings).
type Options struct {
	Common
	// RunDir is the engine's own working directory ("" = the current
	// directory); compile caches go under RunDir/compile-cache.
	RunDir string
	// Settings are the engine-specific options (see Setting).
	Settings Settings
	// Quick asks for the run's quick mode: an engine that has one (the
	// simulator runs faster than real time) uses it.
	Quick bool
	// RunID is the run's id (an engine pod's label).
	RunID string
}

// Remote is an already running server (--engine-url).
type Remote struct {
	// URL is the server's root.
	URL string
	// API is APIOpenAI or APIOllama ("" = the descriptor's API).
	API string
	// Model is the model requested ("" = resolved later).
	Model string
	HTTP  *http.Client
	// Note, when set, is told how a slow readiness wait goes.
	Note func(string)
}

// Descriptor is everything joulebench asks about one engine kind: how it
// starts or attaches to a running server, which flags it needs and
// accepts, what it reports, and its /metrics families. An engine package
// exports one (a function returning it, so that nothing is shared
// mutable state) and a registry collects them.
type Descriptor struct {
	// Kind is the name on the command line (--engine KIND) and in run.json.
	Kind string
	// Doc is a short description for the --engine help.
	Doc string
	// API is the request API the engine serves by default (APIOpenAI or
	// APIOllama).
	API string
	// Simulated is true for an engine whose measurements are simulated
	// (it cannot be given with --engine-url; its GPU may be simulated
	// too, following it).
	Simulated bool
	// SimulatedBy, when set, says whether an engine of this kind started
	// with the settings s is simulated although the kind is not (an
	// engine pod running the simulator): the run is labelled simulated
	// and takes the simulator's quick parameters, as with a Simulated
	// kind.
	SimulatedBy func(s Settings) bool
	// Generic is true for the kind that stands for any server of its API
	// when --engine-url is given without a known kind.
	Generic bool
	// Start builds a managed engine from the run's options (nothing runs
	// until its Start); nil when joulebench cannot start this kind.
	Start func(Options) (Engine, error)
	// Attach builds the engine of an already running server of this kind;
	// nil when this kind cannot be given with --engine-url.
	Attach func(Remote) (Engine, error)
	// Validate checks the options Start needs (nil: none), with errors
	// that name the flags.
	Validate func(Options) error
	// Flags are the engine-specific flags (beyond the ones every engine
	// reads) that this kind accepts, Settings among them.
	Flags []string
	// Settings are the options only this kind reads (Options.Settings),
	// each set by its flag.
	Settings []Setting
	// ClientAPI, when set, is the API requests to an engine of this kind
	// go through, given the engine's API and the settings (nil: the
	// engine's API).
	ClientAPI func(api string, s Settings) string
	// DefaultFamilies are the /metrics families kept by default.
	DefaultFamilies []string
	// ReportsRevision says whether the engine reports the model revision,
	// so that an expected revision can be checked.
	ReportsRevision bool
	// Processes are the names of this engine's server processes, to find
	// one still running beside a run (it may hold a model and the GPU).
	Processes []string
	// Unload asks an already running server of this kind at baseURL to
	// release model (nil: the kind has no way to); it returns what it did.
	Unload func(ctx context.Context, hc *http.Client, baseURL, model string) (string, error)
}

// OtherServerProcesses are the names of inference servers joulebench
// does not drive but that may hold a model and the GPU beside a run.
func OtherServerProcesses() []string { return []string{"mlx_lm.server", "lms", "LM Studio"} }

// ServerProcesses are the process names of every engine of r and of the
// other known inference servers.
func (r *Registry) ServerProcesses() []string {
	var out []string
	for _, k := range r.order {
		out = append(out, r.byKind[k].Processes...)
	}
	return append(out, OtherServerProcesses()...)
}

// Unloader returns how to release a model on an already running server of
// the given kind, or of the given API when the kind has none.
func (r *Registry) Unloader(kind, api string) func(ctx context.Context, hc *http.Client, baseURL, model string) (string, error) {
	if d, ok := r.byKind[kind]; ok && d.Unload != nil {
		return d.Unload
	}
	for _, k := range r.order {
		if d := r.byKind[k]; d.API == api && d.Unload != nil {
			return d.Unload
		}
	}
	return nil
}

// Accepts reports whether the engine reads the engine-specific flag name.
func (d Descriptor) Accepts(flag string) bool { return slices.Contains(d.Flags, flag) }

// Registry is the set of engine kinds a run may name, in registration
// order. Build one with NewRegistry and Register; it is not safe for
// concurrent registration.
type Registry struct {
	order  []string
	byKind map[string]Descriptor
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byKind: map[string]Descriptor{}} }

// Register adds d. An empty or duplicate kind, a descriptor that can be
// neither started nor attached (a simulated one too is started), or a
// second generic kind for the same API is an error.
func (r *Registry) Register(d Descriptor) error {
	switch {
	case d.Kind == "":
		return fmt.Errorf("engine registry: descriptor without a kind")
	case d.Start == nil && d.Attach == nil:
		return fmt.Errorf("engine registry: kind %q can be neither started nor attached", d.Kind)
	case d.API != APIOpenAI && d.API != APIOllama:
		return fmt.Errorf("engine registry: kind %q: API %q, want %s or %s", d.Kind, d.API, APIOpenAI, APIOllama)
	}
	for _, st := range d.Settings {
		if !d.Accepts(st.Flag) {
			return fmt.Errorf("engine registry: kind %q: setting --%s is not among its flags", d.Kind, st.Flag)
		}
		if err := st.check(st.Default); err != nil {
			return fmt.Errorf("engine registry: kind %q: default of setting %w", d.Kind, err)
		}
	}
	if _, dup := r.byKind[d.Kind]; dup {
		return fmt.Errorf("engine registry: kind %q registered twice", d.Kind)
	}
	if d.Generic {
		for _, k := range r.order {
			if o := r.byKind[k]; o.Generic && o.API == d.API {
				return fmt.Errorf("engine registry: kind %q: %q is already the generic %s server", d.Kind, k, d.API)
			}
		}
	}
	r.order = append(r.order, d.Kind)
	r.byKind[d.Kind] = d
	return nil
}

// Lookup returns the descriptor of kind.
func (r *Registry) Lookup(kind string) (Descriptor, bool) {
	d, ok := r.byKind[kind]
	return d, ok
}

// Kinds are the registered kinds in registration order.
func (r *Registry) Kinds() []string { return slices.Clone(r.order) }

// Startable are the kinds joulebench can start, in registration order.
func (r *Registry) Startable() []string {
	return r.filter(func(d Descriptor) bool { return d.Start != nil })
}

// Attachable are the kinds that can be given with --engine-url: the
// generic ones first, then the others in registration order.
func (r *Registry) Attachable() []string {
	generic := r.filter(func(d Descriptor) bool { return d.Attach != nil && d.Generic })
	return append(generic, r.filter(func(d Descriptor) bool { return d.Attach != nil && !d.Generic })...)
}

func (r *Registry) filter(keep func(Descriptor) bool) []string {
	var out []string
	for _, k := range r.order {
		if keep(r.byKind[k]) {
			out = append(out, k)
		}
	}
	return out
}

// ForStart is the descriptor of a managed engine of kind.
func (r *Registry) ForStart(kind string) (Descriptor, error) {
	d, ok := r.byKind[kind]
	switch {
	case ok && d.Start != nil:
		return d, nil
	case ok && d.Attach != nil:
		return Descriptor{}, fmt.Errorf("--engine %s needs --engine-url (an already running server)", kind)
	}
	return Descriptor{}, fmt.Errorf("--engine %q: want one of %s (or --engine-url URL)", kind, strings.Join(r.Startable(), ", "))
}

// ForRemote is the descriptor of an already running server: kind when it
// names one that can attach; for "" or a generic kind, the generic kind
// of api, else the first kind that serves api ("" api: the generic
// OpenAI-compatible kind).
func (r *Registry) ForRemote(kind, api string) (Descriptor, error) {
	d, ok := r.byKind[kind]
	if kind != "" && (!ok || d.Attach == nil) {
		return Descriptor{}, fmt.Errorf("--engine %q with --engine-url: want %s", kind, orList(r.Attachable()))
	}
	if kind != "" && !d.Generic {
		return d, nil
	}
	if api == "" {
		api = APIOpenAI
		if ok {
			api = d.API
		}
	}
	var first *Descriptor
	for _, k := range r.order {
		c := r.byKind[k]
		if c.Attach == nil || c.API != api {
			continue
		}
		if c.Generic {
			return c, nil
		}
		if first == nil {
			first = &c
		}
	}
	if first == nil {
		return Descriptor{}, fmt.Errorf("--engine-api %q: no engine serves it", api)
	}
	return *first, nil
}

// Families are the default /metrics families of kind; for a generic kind
// (a server of unknown kind) the families of every other kind that
// serves its API, in registration order.
func (r *Registry) Families(kind string) []string {
	d, ok := r.byKind[kind]
	if !ok {
		return nil
	}
	if !d.Generic {
		return slices.Clone(d.DefaultFamilies)
	}
	var out []string
	for _, k := range r.order {
		if o := r.byKind[k]; !o.Simulated && o.API == d.API {
			out = append(out, o.DefaultFamilies...)
		}
	}
	return out
}

func orList(kinds []string) string {
	switch len(kinds) {
	case 0:
		return "none"
	case 1:
		return kinds[0]
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}
