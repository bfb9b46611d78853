package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
)

// Registry is the set of power sources a run may name, in registration
// order. Build one with NewRegistry and Register; it is not safe for
// concurrent registration.
type Registry struct {
	usage  string
	order  []string
	byName map[string]Descriptor
	// flagOwner maps each registered flag to its source.
	flagOwner map[string]string
}

// NewRegistry returns an empty registry; usage is the help of the flag
// that names the sources (--telemetry).
func NewRegistry(usage string) *Registry {
	return &Registry{usage: usage, byName: map[string]Descriptor{}, flagOwner: map[string]string{SelectFlag: ""}}
}

// Register adds d. An empty, reserved or duplicate name, no Open, a flag
// another source (or the registry) registers, or an auto role whose flag
// cannot say it was given is an error.
func (r *Registry) Register(d Descriptor) error {
	switch {
	case d.Name == "" || strings.ContainsAny(d.Name, ", +"):
		return fmt.Errorf("telemetry source %q: a name is a non-empty word", d.Name)
	case d.Name == Auto:
		return fmt.Errorf("telemetry source %q: the name is the registry's own choice", d.Name)
	case d.Open == nil:
		return fmt.Errorf("telemetry source %s: no Open", d.Name)
	case d.Auto != nil && (d.Auto.Flag == "") != (d.Auto.Named == nil):
		return fmt.Errorf("telemetry source %s: an auto flag needs Named, and Named its flag", d.Name)
	}
	if _, dup := r.byName[d.Name]; dup {
		return fmt.Errorf("telemetry source %s registered twice", d.Name)
	}
	var flags []string
	if d.Flags != nil {
		fs := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
		d.Flags(fs)
		fs.VisitAll(func(f *pflag.Flag) { flags = append(flags, f.Name) })
	}
	for _, f := range flags {
		if owner, taken := r.flagOwner[f]; taken {
			return fmt.Errorf("telemetry source %s: flag --%s is already registered by %s", d.Name, f, orRegistry(owner))
		}
	}
	for _, f := range flags {
		r.flagOwner[f] = d.Name
	}
	r.order = append(r.order, d.Name)
	r.byName[d.Name] = d
	return nil
}

func orRegistry(owner string) string {
	if owner == "" {
		return "the registry"
	}
	return owner
}

// Any reports whether a source among names (Auto and unknown names
// count as none) has what has asks for.
func (r *Registry) Any(names []string, has func(Descriptor) bool) bool {
	for _, n := range names {
		if d, ok := r.byName[n]; ok && has(d) {
			return true
		}
	}
	return false
}

// Names are the choices of --telemetry: auto, then the sources in
// registration order.
func (r *Registry) Names() []string { return append([]string{Auto}, r.order...) }

// Lookup returns the source registered as name.
func (r *Registry) Lookup(name string) (Descriptor, bool) {
	d, ok := r.byName[name]
	return d, ok
}

// Flags registers --telemetry and every source's flags on f.
func (r *Registry) Flags(f *pflag.FlagSet) {
	f.StringArray(SelectFlag, []string{Auto}, r.usage)
	for _, n := range r.order {
		if d := r.byName[n]; d.Flags != nil {
			d.Flags(f)
		}
	}
}

// Select checks the sources named by --telemetry: each known, none twice,
// and auto or a source that stands alone only alone. None given is auto.
func (r *Registry) Select(given []string) (Selection, error) {
	if len(given) == 0 {
		given = []string{Auto}
	}
	var sel Selection
	for _, c := range given {
		if _, ok := r.byName[c]; !ok && c != Auto {
			return Selection{}, fmt.Errorf("--%s %q: valid are %s", SelectFlag, c, strings.Join(r.Names(), ", "))
		}
		if sel.Has(c) {
			return Selection{}, fmt.Errorf("--%s %s is given twice", SelectFlag, c)
		}
		sel.names = append(sel.names, c)
	}
	if len(sel.names) == 1 {
		return sel, nil
	}
	for _, c := range sel.names {
		if c == Auto || r.byName[c].Alone {
			return Selection{}, fmt.Errorf("--%s %s cannot be combined with other sources (%s): name each source to run side by side",
				SelectFlag, c, strings.Join(sel.names, ", "))
		}
	}
	return sel, nil
}

// Check selects the sources given (Select) and checks every source's
// flags against them, in registration order, before anything opens.
func (r *Registry) Check(given []string, v Values) (Selection, error) {
	sel, err := r.Select(given)
	if err != nil {
		return Selection{}, err
	}
	for _, n := range r.order {
		if d := r.byName[n]; d.Check != nil {
			if err := d.Check(v, sel); err != nil {
				return Selection{}, err
			}
		}
	}
	if sel.One() == Auto {
		if named := r.named(v); len(named) > 1 {
			flags := make([]string, len(named))
			for i, d := range named {
				flags[i] = "--" + d.Auto.Flag
			}
			return Selection{}, fmt.Errorf("%s name %s different power sources: choose one with --%s",
				strings.Join(flags, " and "), count(len(flags)), SelectFlag)
		}
	}
	return sel, nil
}

func count(n int) string {
	if n == 2 {
		return "two"
	}
	return fmt.Sprint(n)
}

// named are the sources that their own flags name to auto, in
// registration order.
func (r *Registry) named(v Values) []Descriptor {
	var out []Descriptor
	for _, n := range r.order {
		if d := r.byName[n]; d.Auto != nil && d.Auto.Named != nil && d.Auto.Named(v) {
			out = append(out, d)
		}
	}
	return out
}

// ranked are the sources auto tries when none is named, lowest rank
// first (registration order among equals).
func (r *Registry) ranked() []Descriptor {
	var out []Descriptor
	for _, n := range r.order {
		if d := r.byName[n]; d.Auto != nil && d.Auto.Rank > 0 {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b Descriptor) int { return a.Auto.Rank - b.Auto.Rank })
	return out
}

// Open opens what sel names: auto's choice, one source, or several read
// side by side (a Multi whose name is theirs joined by "+", whose note is
// each source's). A nil Source means nothing is measured; the info says
// why.
func (r *Registry) Open(ctx context.Context, sel Selection, v Values, env Env) (Source, record.TelemetryInfo, error) {
	env.Logf = env.logf()
	switch names := sel.names; {
	case len(names) == 0:
		return nil, record.TelemetryInfo{}, errors.New("telemetry: no source selected")
	case len(names) > 1:
		return r.openSideBySide(ctx, names, v, env)
	case names[0] == Auto:
		return r.openAuto(ctx, v, env)
	}
	d, ok := r.byName[sel.names[0]]
	if !ok {
		return nil, record.TelemetryInfo{}, fmt.Errorf("telemetry %q is not registered", sel.names[0])
	}
	return d.Open(ctx, v, env)
}

func (r *Registry) openSideBySide(ctx context.Context, names []string, v Values, env Env) (Source, record.TelemetryInfo, error) {
	var srcs []Source
	closeAll := func() {
		for _, s := range srcs {
			_ = s.Close()
		}
	}
	var notes []string
	var clocks []record.ClockSync
	sim := false
	for _, n := range names {
		d, ok := r.byName[n]
		if !ok {
			closeAll()
			return nil, record.TelemetryInfo{}, fmt.Errorf("telemetry %q is not registered", n)
		}
		src, info, err := d.Open(ctx, v, env)
		if err != nil {
			closeAll()
			return nil, record.TelemetryInfo{}, err
		}
		if src != nil {
			srcs = append(srcs, src)
		}
		notes = append(notes, n+": "+info.Note)
		clocks = append(clocks, info.ClockSync...)
		sim = sim || info.Simulated
	}
	m := NewMulti(env.Clock, srcs...)
	if _, err := m.Devices(ctx); err != nil {
		closeAll()
		return nil, record.TelemetryInfo{}, err
	}
	return m, record.TelemetryInfo{Source: m.Name(), Simulated: sim, Note: "side by side: " + strings.Join(notes, " | "), ClockSync: clocks}, nil
}

// openAuto is --telemetry auto: the source a flag names; else the ranked
// sources in turn; else none, with a warning (told to env.NoSource) that
// says why.
func (r *Registry) openAuto(ctx context.Context, v Values, env Env) (Source, record.TelemetryInfo, error) {
	withHow := func(src Source, info record.TelemetryInfo, how string) (Source, record.TelemetryInfo, error) {
		info.Note = "auto (" + how + "): " + info.Note
		return src, info, nil
	}
	if named := r.named(v); len(named) > 0 {
		d := named[0]
		src, info, err := d.Open(ctx, v, env)
		if err != nil {
			return nil, record.TelemetryInfo{}, err
		}
		return withHow(src, info, "--"+d.Auto.Flag+" given")
	}
	var why []string
	for _, d := range r.ranked() {
		if skipped(d, env, &why) {
			continue
		}
		src, info, err := d.Open(ctx, v, env)
		switch {
		case err == nil:
			return withHow(src, info, d.Auto.How)
		case d.Auto.Fatal != nil && d.Auto.Fatal(err):
			return nil, record.TelemetryInfo{}, err
		}
		why = append(why, err.Error())
	}
	var hints []string
	for _, n := range r.order {
		if d := r.byName[n]; d.Auto != nil && d.Auto.Hint != "" {
			hints = append(hints, d.Auto.Hint)
		}
	}
	hints = append(hints, "--telemetry none silences this warning")
	msg := "no power source found, energy metrics will be not applicable: " + strings.Join(why, "; ") + ". " + strings.Join(hints, "; ")
	if env.NoSource != nil {
		env.NoSource(msg)
	}
	return nil, record.TelemetryInfo{Source: NoneName, Note: "auto: " + msg}, nil
}

// skipped reports whether auto passes d by without trying it, adding why
// (when it says) to why.
func skipped(d Descriptor, env Env, why *[]string) bool {
	if d.Auto.Skip == nil {
		return false
	}
	w, skip := d.Auto.Skip(env)
	if skip && w != "" {
		*why = append(*why, w)
	}
	return skip
}
