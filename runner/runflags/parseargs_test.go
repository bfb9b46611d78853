package runflags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// A campaign's run flags parse as the run command's: the global flags, a
// run's and the command's own (extra); an unknown flag is the parser's
// error; the profile argument is left for the caller to refuse.
func TestParseArgs(t *testing.T) {
	extra := func(f *pflag.FlagSet) { f.String("spec", "", "") }
	f, err := ParseArgs([]string{"--engine", "vllm", "--log-level", "debug", "--gpu-clocks", "900,1200", "--spec", "s.json", "extra"}, testRegistries(), extra)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.GetString("log-level"); v != "debug" || !f.Changed("spec") || f.NArg() != 1 {
		t.Errorf("log-level %q, spec changed %v, args %v", v, f.Changed("spec"), f.Args())
	}
	if s := Build("p", f, Flags{F: f}, testRegistries()); s.Clocks != "900,1200" || s.LogLevel != "debug" {
		t.Errorf("settings: clocks %q, log level %q", s.Clocks, s.LogLevel)
	}
	if _, err := ParseArgs([]string{"--bogus"}, testRegistries(), nil); err == nil || err.Error() != "unknown flag: --bogus" {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := ParseArgs([]string{"--spec", "x"}, testRegistries(), nil); err == nil || !strings.Contains(err.Error(), "--spec") {
		t.Errorf("--spec without extra: %v", err)
	}
}

// Resolve builds a run's settings from its flags, or with --spec from the
// spec file, whose values it stores into the configuration.
func TestResolve(t *testing.T) {
	extra := func(f *pflag.FlagSet) { f.String("spec", "", "") }
	f, _ := ParseArgs([]string{"--engine", "sglang"}, testRegistries(), extra)
	s, spec, err := Resolve([]string{"benchmark-1.5"}, f, Flags{F: f}, nil, testRegistries())
	if err != nil || spec || s.Profile != "benchmark-1.5" || strings.Join(s.Engines, ",") != "sglang" {
		t.Errorf("flags: %+v, spec %v, %v", s, spec, err)
	}
	path := filepath.Join(t.TempDir(), "spec.json")
	b, err := Marshal(parse(t, "--engine", "vllm", "--gpu-power-limit", "300"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ = ParseArgs([]string{"--spec", path}, testRegistries(), extra)
	stored := map[string]any{}
	s, spec, err = Resolve(nil, f, Flags{F: f}, func(k string, v any) { stored[k] = v }, testRegistries())
	if err != nil || !spec || s.PowerLimit != "300" || stored["gpu-power-limit"] != "300" || stored["engine"] == nil {
		t.Errorf("spec: %+v, spec %v, stored %v, %v", s, spec, stored["gpu-power-limit"], err)
	}
}
