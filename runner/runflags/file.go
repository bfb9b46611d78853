package runflags

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// secretTelemetry are the power sources' flags that may hold a secret
// (credentials in a URL, an ipmitool password argument): like the
// Settings fields tagged json:"-", never written to a spec file.
var secretTelemetry = []string{"dcgm-url", "prometheus-url", "redfish-url", "ipmi-arg"}

// SecretFlags are the flags whose values a spec file never holds: a run
// given --spec takes them from its own command line and environment (a
// campaign passes them through the environment).
func SecretFlags() []string {
	var out []string
	var s Settings
	for _, fd := range s.fields() {
		if fd.secret {
			out = append(out, fd.flag)
		}
	}
	return append(out, secretTelemetry...)
}

// Encode writes s as a spec file: JSON, without its secrets (SecretFlags).
func Encode(w io.Writer, s Settings) error {
	s.Version = FormatVersion
	tel := make(map[string]any, len(s.Telemetry))
	for k, v := range s.Telemetry {
		if !slices.Contains(secretTelemetry, k) {
			tel[k] = v
		}
	}
	s.Telemetry = tel
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Decode reads a spec file that Encode wrote: name is what errors call
// it. Unknown fields, a secret, a flag that no engine or power source of
// reg declares, a value of the wrong type and another version are errors.
// The secrets are left empty (ReadSecrets).
func Decode(r io.Reader, name string, reg Registries) (Settings, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var s Settings
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("spec %s: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Settings{}, fmt.Errorf("spec %s: data after the JSON object", name)
	}
	if s.Version != FormatVersion {
		return Settings{}, fmt.Errorf("spec %s: version %d: this joulebench reads version %d", name, s.Version, FormatVersion)
	}
	declared := map[string]bool{}
	for _, st := range reg.Engines.Declared() {
		declared[st.Flag] = true
	}
	for k := range s.EngineSettings {
		if !declared[k] {
			return Settings{}, fmt.Errorf("spec %s: engine_settings: %q is no engine's setting", name, k)
		}
	}
	tel, err := decodeTelemetry(s.Telemetry, reg)
	if err != nil {
		return Settings{}, fmt.Errorf("spec %s: telemetry: %w", name, err)
	}
	s.Telemetry = tel
	s.normalize()
	return s, nil
}

// normalize makes the empty lists nil, as Build does.
func (s *Settings) normalize() {
	for _, fd := range s.fields() {
		if p, ok := fd.ptr.(*[]string); ok {
			*p = orNil(*p)
		}
	}
	s.Sets, s.Labels, s.Changed = orNil(s.Sets), orNil(s.Labels), orNil(s.Changed)
}

// decodeTelemetry checks the power sources' flags of a spec file: each a
// flag some source declares, not a secret, of the flag's type; lists
// become []string.
func decodeTelemetry(in map[string]any, reg Registries) (map[string]any, error) {
	if in == nil {
		return nil, nil
	}
	flags := telemetryFlags(reg)
	out := make(map[string]any, len(in))
	for k, v := range in {
		fl := flags.Lookup(k)
		switch {
		case fl == nil:
			return nil, fmt.Errorf("%q is no power source's flag", k)
		case slices.Contains(secretTelemetry, k):
			return nil, fmt.Errorf("%q may hold a secret: a spec file never does (give --%s on the command line or in the environment)", k, k)
		}
		got, ok := typed(fl, v)
		if !ok {
			return nil, fmt.Errorf("%s: want a %s, got %v", k, fl.Value.Type(), v)
		}
		out[k] = got
	}
	return out, nil
}

// typed is a JSON value as the type of flag fl, and whether it is one.
func typed(fl *pflag.Flag, v any) (any, bool) {
	switch fl.Value.Type() {
	case "bool":
		b, ok := v.(bool)
		return b, ok
	case "float64":
		x, ok := v.(float64)
		return x, ok
	case "stringArray", "stringSlice":
		if v == nil {
			return []string(nil), true
		}
		list, ok := v.([]any)
		if !ok {
			return nil, false
		}
		var out []string
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	s, ok := v.(string)
	return s, ok
}

// ReadSecrets sets the secrets of s (SecretFlags) from v: a run given
// --spec reads them from its own flags and environment.
func (s *Settings) ReadSecrets(v Values, reg Registries) {
	for _, fd := range s.fields() {
		if fd.secret {
			fd.read(v)
		}
	}
	flags := telemetryFlags(reg)
	for _, k := range secretTelemetry {
		if fl := flags.Lookup(k); fl != nil {
			if s.Telemetry == nil {
				s.Telemetry = map[string]any{}
			}
			s.Telemetry[k] = telemetryValue(fl, v)
		}
	}
}

// Parse builds the Settings of a run of profile with the run flags args
// alone (no configuration file or environment): the flags as Define and
// Global define them.
func Parse(profile string, args []string, reg Registries) (Settings, error) {
	f, err := ParseArgs(args, reg, nil)
	if err != nil {
		return Settings{}, err
	}
	if f.NArg() > 0 {
		return Settings{}, fmt.Errorf("%q is not a flag", f.Arg(0))
	}
	return Build(profile, f, Flags{F: f}, reg), nil
}

// Marshal is Encode to bytes.
func Marshal(s Settings) ([]byte, error) {
	var b bytes.Buffer
	err := Encode(&b, s)
	return b.Bytes(), err
}

// NotWithSpec returns the flags of f given on the command line that a run
// given --spec refuses: every flag but --spec itself, those in allowed,
// and the secrets (SecretFlags), which a spec file never holds.
func NotWithSpec(f *pflag.FlagSet, allowed ...string) []string {
	ok := append(SecretFlags(), allowed...)
	var bad []string
	f.Visit(func(fl *pflag.Flag) {
		if fl.Name != "spec" && !slices.Contains(ok, fl.Name) {
			bad = append(bad, "--"+fl.Name)
		}
	})
	return bad
}

// WhereFlags are the run flags that may be given with --spec to say
// what a job learns only where it runs (a Slurm job over several nodes
// reads the agents of the nodes it was given, and benchmarks the engine
// parts it started on them): --telemetry, --agent and --deployment. They
// replace the spec's values.
var WhereFlags = []string{"telemetry", "agent", "deployment"}

// ApplyWhereFlags replaces the spec's power source and deployment with
// the WhereFlags given in f, and records them as given on the command
// line: a flag that is a Settings field (--deployment) sets that field,
// a power source's flag (--telemetry, --agent) the Telemetry map.
func (s *Settings) ApplyWhereFlags(f *pflag.FlagSet) {
	fields := s.fields()
	for _, name := range WhereFlags {
		fl := f.Lookup(name)
		if fl == nil || !fl.Changed {
			continue
		}
		s.Given(name)
		if i := slices.IndexFunc(fields, func(fd field) bool { return fd.flag == name }); i >= 0 {
			fields[i].read(Flags{F: f})
			continue
		}
		if s.Telemetry == nil {
			s.Telemetry = map[string]any{}
		}
		switch fl.Value.Type() {
		case "stringArray":
			v, _ := f.GetStringArray(name)
			s.Telemetry[name] = orNil(v)
		case "stringSlice":
			v, _ := f.GetStringSlice(name)
			s.Telemetry[name] = orNil(v)
		default:
			s.Telemetry[name] = fl.Value.String()
		}
	}
}

// ReadSpec is the Settings of a run given --spec: the spec file f names,
// with the secrets from v (the run's own flags, configuration and
// environment), the WhereFlags and --out and --no-progress given in f. Any
// other flag given with --spec, a file that cannot be read and a spec
// that Decode refuses are invalid input (exitcode.Invalid).
func ReadSpec(f *pflag.FlagSet, v Values, reg Registries) (Settings, error) {
	path, _ := f.GetString("spec")
	if bad := NotWithSpec(f, append([]string{"out", "no-progress", "config"}, WhereFlags...)...); len(bad) > 0 {
		return Settings{}, exitcode.Invalidf("--spec %s: %s cannot be given with it: the spec file holds every run flag (only --out, --no-progress, where power is read (--telemetry, --agent), the engine parts (--deployment) and the secrets may be given with --spec)", path, strings.Join(bad, ", "))
	}
	src, err := boundedfile.Read(path, "spec file", boundedfile.MaxProfileBytes)
	if err != nil {
		return Settings{}, exitcode.With(exitcode.Invalid, err)
	}
	s, err := Decode(bytes.NewReader(src), path, reg)
	if err != nil {
		return Settings{}, exitcode.With(exitcode.Invalid, err)
	}
	s.ReadSecrets(v, reg)
	s.ApplyWhereFlags(f)
	if f.Changed("out") {
		s.Out, _ = f.GetString("out")
	}
	if f.Changed("no-progress") {
		s.NoProgress, _ = f.GetBool("no-progress")
	}
	return s, nil
}
