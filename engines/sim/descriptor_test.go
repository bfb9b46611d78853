package sim

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

// TestDescriptorStart: the descriptor builds the simulator from the run's
// options like any engine: seed, model, quick mode and preset reach the
// engine and the simulated GPU that follows it.
func TestDescriptorStart(t *testing.T) {
	d := Descriptor()
	o := engines.Options{Common: engines.Common{Seed: 7, Model: "tiny-sim", Log: io.Discard}, Quick: true,
		Settings: engines.Settings{FlagPreset: "small-batch"}}
	eng, err := d.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	e := eng.(*Engine)
	c, g := e.Config(), e.GPUConfig()
	// Quick: 3 times real time; the GPU's lags (0.5 s rising, 2 s
	// falling by default) divided by 3 to match.
	if c.Speed != 3 || c.Seed != 7 || c.Model != "tiny-sim" || c.Slots != 16 || c.KVCacheTokens != 1024 {
		t.Errorf("engine speed %g seed %d model %q slots %d kv %d, want 3, 7, tiny-sim, 16, 1024", c.Speed, c.Seed, c.Model, c.Slots, c.KVCacheTokens)
	}
	if g.Seed != 7 || g.RiseTauS != 0.5/3 || g.DecayTauS != 2.0/3 {
		t.Errorf("gpu seed %d rise %g decay %g, want 7, 0.5/3, 2/3", g.Seed, g.RiseTauS, g.DecayTauS)
	}
	if id := e.Expect(); id.Model != "tiny-sim" {
		t.Errorf("expects model %q", id.Model)
	}
	// Without the quick mode the lags are the default ones.
	eng, err = d.Start(engines.Options{Common: engines.Common{Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	if g := eng.(*Engine).GPUConfig(); g.RiseTauS != 0.5 || g.DecayTauS != 2 || eng.(*Engine).Config().Speed != 1 {
		t.Errorf("not quick: rise %g decay %g speed %g, want 0.5, 2, 1", g.RiseTauS, g.DecayTauS, eng.(*Engine).Config().Speed)
	}
}

// TestPresets: each preset declared once (Presets) is the setting's value
// list, and changes what it says.
func TestPresets(t *testing.T) {
	st := Descriptor().Settings
	if len(st) != 3 || st[0].Flag != FlagPreset || st[1].Flag != FlagGPU || st[2].Flag != FlagModel {
		t.Fatalf("settings %+v, want --%s, --%s, --%s", st, FlagPreset, FlagGPU, FlagModel)
	}
	var gpus []string
	for _, v := range st[1].Values {
		gpus = append(gpus, v.Name)
	}
	if want := []string{"h100-sxm", "h200-sxm", "a100-sxm4", "b200"}; !slices.Equal(gpus, want) {
		t.Errorf("--%s values %v, want %v", FlagGPU, gpus, want)
	}
	var names []string
	for _, v := range st[0].Values {
		names = append(names, v.Name)
	}
	if want := []string{"drift", "no-release", "small-batch", "prefix-cache", "disaggregated"}; !slices.Equal(names, want) {
		t.Errorf("values %v, want %v", names, want)
	}
	if h := st[0].Help(); !strings.HasPrefix(h, "simulator behaviour for tests: drift (J/token never settles), ") {
		t.Errorf("help %q", h)
	}
	start := func(preset string) *Engine {
		t.Helper()
		e, err := Descriptor().Start(engines.Options{Settings: engines.Settings{FlagPreset: preset}})
		if err != nil {
			t.Fatal(err)
		}
		return e.(*Engine)
	}
	none := start("")
	if c, g := none.Config(), none.GPUConfig(); c.DriftPerRequest != 0 || c.PrefixCache || c.Slots == 16 || g.ReleaseOffsetW != 0 {
		t.Errorf("no preset: drift %g prefix cache %v slots %d release offset %g", c.DriftPerRequest, c.PrefixCache, c.Slots, g.ReleaseOffsetW)
	}
	if c := start("drift").Config(); c.DriftPerRequest != 0.01 {
		t.Errorf("drift: %g per request, want 0.01", c.DriftPerRequest)
	}
	// Half the idle power (60 W) stays after release: 30 W.
	if g := start("no-release").GPUConfig(); g.ReleaseOffsetW != 30 {
		t.Errorf("no-release: offset %g W, want 30", g.ReleaseOffsetW)
	}
	if c := start("prefix-cache").Config(); !c.PrefixCache {
		t.Error("prefix-cache: no prefix cache")
	}
	// disaggregated: a deployment of two engines and a router, its GPUs
	// on two nodes, the decode node's clock 0.75 s ahead.
	dis, err := Descriptor().Start(engines.Options{Settings: engines.Settings{FlagPreset: "disaggregated"}, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := dis.(*Disaggregated)
	if !ok {
		t.Fatalf("disaggregated: %T", dis)
	}
	if n := d.SimulatedNodes(); len(n) != 2 || n[0].Config.Host != PrefillHost || n[1].Config.Host != DecodeHost ||
		n[1].Config.Role != "decode" || n[1].OffsetS != 0.75 || n[0].OffsetS != 0 || n[1].Config.IDBase != 2 || n[1].Config.RiseTauS != 0.5/3 {
		t.Errorf("disaggregated nodes %+v", n)
	}
	if _, err := Descriptor().Start(engines.Options{Settings: engines.Settings{FlagPreset: "bogus"}}); err == nil || !strings.Contains(err.Error(), `--sim-preset "bogus"`) {
		t.Errorf("unknown preset: %v", err)
	}
}

// --sim-gpu and --sim-model start the engine on the hardware model, and
// run.json's engine.extra names the preset; without them the toy model
// is named.
func TestHWSettingsStartTheHardwareModel(t *testing.T) {
	d := Descriptor()
	eng, err := d.Start(engines.Options{Common: engines.Common{Log: io.Discard}, Quick: true,
		Settings: engines.Settings{FlagGPU: "h200-sxm", FlagModel: "mixtral-8x7b"}})
	if err != nil {
		t.Fatal(err)
	}
	e := eng.(*Engine)
	if e.Config().HW == nil || e.Config().Speed != 1 || e.GPUConfig().Devices != 2 || e.GPUConfig().RiseTauS != 0.5 {
		t.Errorf("h200/mixtral: HW %v, speed %v, devices %d, rise %v", e.Config().HW != nil, e.Config().Speed, e.GPUConfig().Devices, e.GPUConfig().RiseTauS)
	}
	x := e.Info().Extra
	if x["sim_hardware"] != "h200-sxm/mixtral-8x7b" || x["sim_gpu"] != "h200-sxm" || x["sim_model"] != "mixtral-8x7b" {
		t.Errorf("extra = %v", x)
	}
	toy, err := d.Start(engines.Options{Common: engines.Common{Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	if x := toy.Info().Extra; x["sim_hardware"] != ToyPreset || x["sim_gpu"] != nil {
		t.Errorf("toy extra = %v", x)
	}
	if _, err := d.Start(engines.Options{Common: engines.Common{Log: io.Discard}, Settings: engines.Settings{FlagGPU: "v100"}}); err == nil ||
		!strings.Contains(err.Error(), "--sim-gpu") || !strings.Contains(err.Error(), "h100-sxm") {
		t.Errorf("an unknown GPU: %v, want an error naming the flag and the presets", err)
	}
}
