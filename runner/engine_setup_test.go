package runner

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// The simulator is built through its descriptor like any engine: the
// seed, the quick mode and --sim-preset (a setting it declares) reach the
// engine and the simulated GPU that follows it; the options only real
// engines read are not passed to it, even when another engine of the run
// takes them.
func TestSetupSimulatedEngine(t *testing.T) {
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engines: []string{"sim", "vllm"},
		Engine: EngineOptions{Common: engines.Common{Seed: 3}, Thinking: "on", APIKey: "k",
			Settings: engines.Settings{"sim-preset": "no-release"}}})
	if err != nil {
		t.Fatal(err)
	}
	r.engine = "sim"
	es, err := r.setupEngine(engineEnv{RunID: "r1", Clock: workflow.NewClock(), Quick: true, EngineLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if !es.Simulated || es.Kind != "sim" || es.SimLoad == nil || es.External {
		t.Fatalf("setup kind %q simulated %v load %v external %v", es.Kind, es.Simulated, es.SimLoad, es.External)
	}
	g := es.SimTelemetry
	// no-release keeps half the idle 60 W after release: 30 W; quick
	// divides the 0.5 s rise lag by 3.
	if g.ReleaseOffsetW != 30 || g.RiseTauS != 0.5/3 || g.Seed != 3 {
		t.Errorf("simulated GPU offset %g W rise %g s seed %d, want 30, 0.5/3, 3", g.ReleaseOffsetW, g.RiseTauS, g.Seed)
	}
	if !strings.Contains(es.Model, "sim") || es.Expect.Model != es.Model {
		t.Errorf("model %q, expected %q", es.Model, es.Expect.Model)
	}
	if es.Spec.Thinking != "" || es.Spec.APIKey != "" {
		t.Errorf("the simulator got --thinking %q, --api-key %q", es.Spec.Thinking, es.Spec.APIKey)
	}
}

// A preset the simulator does not declare is refused before anything is
// built, with the values it declares.
func TestSimPresetChecked(t *testing.T) {
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engine: EngineOptions{Settings: engines.Settings{"sim-preset": "fast"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.setupEngine(engineEnv{Clock: workflow.NewClock(), EngineLog: io.Discard})
	if want := `--sim-preset "fast": want drift, no-release, small-batch, prefix-cache or disaggregated`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err %v, want %q", err, want)
	}
}

// The engine options are one set (engines.Common): what the run shares
// reaches each engine's spec as given; Bin, Model and Env are the
// engine's own, from the command line's per-kind values.
func TestEngineSpecCommon(t *testing.T) {
	common := engines.Common{Bin: "not read", Model: "not read", Env: map[string]string{"NOT": "read"},
		Args: []string{"--enforce-eager"}, ModelFile: "m.gguf", Revision: "r1", Port: 8001, TP: 2, MaxModelLen: 4096, Slots: 3, Seed: 9}
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engines: []string{"vllm"},
		Engine: EngineOptions{Common: common, Models: []string{"vllm=org/m"}, EnvVars: []string{"A=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := r.engineSpec("vllm", engineEnv{EngineLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	want := common
	want.Bin, want.Model, want.Env, want.Log = "", "org/m", map[string]string{"A": "1"}, io.Discard
	if !reflect.DeepEqual(spec.Common, want) {
		t.Errorf("spec options\n%+v, want\n%+v", spec.Common, want)
	}
}
