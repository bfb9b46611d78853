package runner

import (
	"errors"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

// TestSimulatedKindBySettings: a kind that is not simulated is, for the
// settings its SimulatedBy says so (an engine pod running the
// simulator), and never with --engine-url.
func TestSimulatedKindBySettings(t *testing.T) {
	reg := engines.NewRegistry()
	err := reg.Register(engines.Descriptor{Kind: "pod", API: engines.APIOpenAI, Flags: []string{"pod-sim"},
		Settings:    []engines.Setting{{Flag: "pod-sim"}},
		Start:       func(engines.Options) (engines.Engine, error) { return nil, errors.New("not started") },
		SimulatedBy: func(s engines.Settings) bool { return s.Bool("pod-sim") }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		settings engines.Settings
		url      string
		want     bool
	}{
		{"real engine", engines.Settings{"pod-sim": "false"}, "", false},
		{"simulator in the pod", engines.Settings{"pod-sim": "true"}, "", true},
		{"with --engine-url", engines.Settings{"pod-sim": "true"}, "http://127.0.0.1:1", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Runner{s: &Spec{Registry: reg, Engine: EngineOptions{URL: c.url, Settings: c.settings}}}
			if got := r.simulatedKind("pod"); got != c.want {
				t.Fatalf("simulatedKind = %v, want %v", got, c.want)
			}
		})
	}
}
