package main

import (
	"strings"
	"testing"

	simengine "github.com/joulebench/joulebench/engines/sim"
)

// The engine-specific flags are the descriptors' settings: `run --help`
// shows each with the help its descriptor declares, the simulator's
// presets listed from the one declaration of them (sim.Presets).
func TestEngineSettingFlagsFromDescriptors(t *testing.T) {
	a := newApp(nil, nil)
	run, _, err := a.root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	decl := a.engines.Declared()
	if len(decl) == 0 {
		t.Fatal("no engine declares a setting")
	}
	for _, st := range decl {
		f := run.Flags().Lookup(st.Flag)
		if f == nil {
			t.Errorf("--%s: not a flag of run", st.Flag)
			continue
		}
		// A setting with neither values nor free text is a switch.
		want := st.Default
		if st.Values == nil && !st.Free {
			want = "false"
		}
		if f.Usage != st.Help() || f.DefValue != want {
			t.Errorf("--%s: usage %q default %q, want %q and %q", st.Flag, f.Usage, f.DefValue, st.Help(), want)
		}
	}
	usage := run.Flags().Lookup(simengine.FlagPreset).Usage
	for _, p := range simengine.Presets() {
		if !strings.Contains(usage, p.Name+" ("+p.Doc+")") {
			t.Errorf("--%s help %q lacks %s (%s)", simengine.FlagPreset, usage, p.Name, p.Doc)
		}
	}
	if got := run.Flags().Lookup("ollama-api").DefValue; got != "native" {
		t.Errorf("--ollama-api default %q, want native", got)
	}
}
