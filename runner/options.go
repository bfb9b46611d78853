package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// managedOnlyFlags are the options every engine that joulebench starts
// reads, and no other: not the simulator, not a server given with
// --engine-url.
func managedOnlyFlags() []string { return []string{"engine-bin", "engine-arg", "engine-env", "port"} }

// remoteEngineFlags are the engine-specific options that still apply to a
// server given with --engine-url (what is requested and expected of it).
func remoteEngineFlags() []string { return []string{"model", "revision", "ollama-api"} }

// simIgnoredFlags are the options of real engines the simulator ignores.
func simIgnoredFlags() []string {
	return []string{"engine-api", "engine-version", "precision", "thinking", "api-key", "image-digest"}
}

// checkEngineFlags validates the engine options before anything is
// created: the kind exists and can run as asked, every option the user set
// (changed) applies to it (the descriptor's Flags for the engine-specific
// ones), and the engine's own checks pass.
func (r *Runner) checkEngineFlags(changed func(string) bool) error {
	_, err := r.inapplicableFlags(changed)
	return err
}

// checkEngineKind checks that the engine kind exists and can run as asked
// (started, or attached with --engine-url).
func (r *Runner) checkEngineKind(kind string, url bool) error {
	reg := r.s.Registry
	d, ok := reg.Lookup(kind)
	switch {
	case ok && d.Simulated && url:
		return Invalidf("--engine %s cannot be combined with --engine-url", kind)
	case ok && d.Simulated:
	case url:
		if _, err := reg.ForRemote(kind, r.s.Engine.API); err != nil {
			return Invalidf("%v", err)
		}
	default:
		if _, err := reg.ForStart(kind); err != nil {
			return Invalidf("%v", err)
		}
	}
	return nil
}

// notApplying is the error naming the flags bad that do not apply to the
// engine kind (attached to a URL when url), with the flags of the kind's
// own that do (applies).
func notApplying(bad []string, kind string, url bool, flags []string, applies func(string) bool) error {
	how := "--engine " + kind
	if url {
		how += " with --engine-url"
	}
	var takes []string
	for _, f := range flags {
		if applies(f) {
			takes = append(takes, "--"+f)
		}
	}
	if len(takes) == 0 {
		takes = []string{"none"}
	}
	verb := "does"
	if len(bad) > 1 {
		verb = "do"
	}
	return Invalidf("%s %s not apply to %s (its engine-specific flags: %s)", strings.Join(bad, ", "), verb, how, strings.Join(takes, ", "))
}

// inapplicableFlags checks the engine kind (and its URL mode) and returns
// the options set by the user that do not apply to it, with the error
// that names them (nil when none).
func (r *Runner) inapplicableFlags(changed func(string) bool) ([]string, error) {
	kind := r.engineKind()
	// A deployment's kind is its served part's, attached when that part
	// is external (checked as the file was read: ReadDeployment).
	external := r.deployment != nil && !r.deployment.served().managed()
	url := r.s.Engine.URL != "" || external
	if err := r.checkEngineKind(kind, url); err != nil {
		return nil, err
	}
	d, _ := r.s.Registry.Lookup(kind)
	specific := map[string]bool{}
	for _, k := range r.s.Registry.Kinds() {
		o, _ := r.s.Registry.Lookup(k)
		for _, f := range o.Flags {
			specific[f] = true
		}
	}
	var bad []string
	applies := func(f string) bool {
		switch {
		case f == "model" && url:
			return true // the model to request of the server, whatever its kind
		case specific[f] && !d.Accepts(f):
			return false
		case specific[f] && url:
			return slices.Contains(remoteEngineFlags(), f)
		case slices.Contains(managedOnlyFlags(), f):
			return !url && !d.Simulated
		case slices.Contains(simIgnoredFlags(), f):
			return !d.Simulated
		}
		return true
	}
	names := slices.Sorted(maps.Keys(specific))
	names = append(names, managedOnlyFlags()...)
	names = append(names, simIgnoredFlags()...)
	if err := r.checkModels(); err != nil {
		return nil, err
	}
	if _, err := r.binFor(kind); err != nil {
		return nil, err
	}
	given := func(f string) bool {
		switch f {
		case "model":
			// Only a value for this engine (KIND=ID, or a plain ID) counts.
			return changed(f) && r.modelFor(kind) != ""
		case "engine-bin":
			bin, _ := r.binFor(kind)
			return changed(f) && bin != ""
		}
		return changed(f)
	}
	for _, f := range names {
		if given(f) && !applies(f) && !slices.Contains(bad, "--"+f) {
			bad = append(bad, "--"+f)
		}
	}
	if len(bad) > 0 {
		return bad, notApplying(bad, kind, url, d.Flags, applies)
	}
	if external {
		return nil, nil // no engine spec of its own: the part is its URL
	}
	_, err := r.engineSpec(kind, engineEnv{})
	return nil, err
}

// perEngineFlags checks the options of a run against several engines: an
// option must apply to at least one of them, and each engine's run is
// then checked with only the options that apply to it (--max-model-len for
// the llama.cpp of `--engine sim --engine llamacpp`, say). It returns the
// changed function of each engine, by position in kinds.
func (r *Runner) perEngineFlags(kinds []string, changed func(string) bool) ([]func(string) bool, error) {
	defer func(e string) { r.engine = e }(r.engine)
	bad := make([][]string, len(kinds))
	var firstErr error
	for i, k := range kinds {
		r.engine = k
		b, err := r.inapplicableFlags(changed)
		if err != nil && b == nil {
			return nil, fmt.Errorf("engine %s: %w", k, err)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("engine %s: %w", k, err)
		}
		bad[i] = b
	}
	for _, f := range bad[0] {
		everywhere := true
		for _, b := range bad[1:] {
			everywhere = everywhere && slices.Contains(b, f)
		}
		if everywhere {
			return nil, firstErr
		}
	}
	out := make([]func(string) bool, len(kinds))
	for i := range kinds {
		skip := bad[i]
		out[i] = func(f string) bool { return changed(f) && !slices.Contains(skip, "--"+f) }
		r.engine = kinds[i]
		if err := r.checkRunFlags(out[i]); err != nil {
			return nil, fmt.Errorf("engine %s: %w", kinds[i], err)
		}
	}
	return out, nil
}

// modelValues are the --model values: each a plain model id, or KIND=ID
// where KIND is an engine kind.
func (r *Runner) modelValues() (plain []string, byKind map[string]string, err error) {
	byKind = map[string]string{}
	for _, v := range r.s.Engine.Models {
		k, id, ok := strings.Cut(v, "=")
		if !ok {
			plain = append(plain, v)
			continue
		}
		if _, known := r.s.Registry.Lookup(k); !known {
			return nil, nil, Invalidf("--model %q: %q is not an engine kind (KIND=ID gives one engine its model; kinds: %s)", v, k, strings.Join(r.s.Registry.Kinds(), ", "))
		}
		if _, dup := byKind[k]; dup {
			return nil, nil, Invalidf("--model %s= given twice", k)
		}
		byKind[k] = id
	}
	if len(plain) > 1 {
		return nil, nil, Invalidf("--model given %d times without KIND=: give one model, or one KIND=ID per engine", len(plain))
	}
	return plain, byKind, nil
}

// checkModels checks the --model values: at most one plain id, KIND=ID
// only for a kind the run has.
func (r *Runner) checkModels() error {
	_, byKind, err := r.modelValues()
	if err != nil {
		return err
	}
	kinds := r.s.Engines
	for k := range byKind {
		if !slices.Contains(kinds, k) && !(len(kinds) <= 1 && k == r.engineKind()) {
			return Invalidf("--model %s=%s: the run has no engine %s (engines: %s)", k, byKind[k], k, strings.Join(kinds, ", "))
		}
	}
	return nil
}

// modelFor is the model of engine kind: its own KIND=ID value, else the
// plain --model value, else "".
func (r *Runner) modelFor(kind string) string {
	plain, byKind, err := r.modelValues()
	if err != nil {
		return ""
	}
	if m, ok := byKind[kind]; ok {
		return m
	}
	if len(plain) == 1 {
		return plain[0]
	}
	return ""
}

// binFor is the executable of engine kind: its own --engine-bin KIND=PATH
// value, else the plain --engine-bin value, else "" (the engine's
// default). A KIND= that is no engine kind, or not one of the run's, two
// values for one kind and two plain values are errors.
func (r *Runner) binFor(kind string) (string, error) {
	var plain []string
	byKind := map[string]string{}
	for _, v := range r.s.Engine.Bins {
		k, path, ok := strings.Cut(v, "=")
		if _, known := r.s.Registry.Lookup(k); !ok || !known {
			// A path may hold "=": only a known kind before it is KIND=.
			plain = append(plain, v)
			continue
		}
		if _, dup := byKind[k]; dup {
			return "", Invalidf("--engine-bin %s= given twice", k)
		}
		if path == "" {
			return "", Invalidf("--engine-bin %q: want KIND=PATH with a path", v)
		}
		kinds := r.s.Engines
		if !slices.Contains(kinds, k) && !(len(kinds) <= 1 && k == r.engineKind()) {
			return "", Invalidf("--engine-bin %s=%s: the run has no engine %s (engines: %s)", k, path, k, strings.Join(kinds, ", "))
		}
		byKind[k] = path
	}
	if len(plain) > 1 {
		return "", Invalidf("--engine-bin given %d times without KIND=: give one executable, or one KIND=PATH per engine", len(plain))
	}
	if b, ok := byKind[kind]; ok {
		return b, nil
	}
	if len(plain) == 1 {
		return plain[0], nil
	}
	return "", nil
}
