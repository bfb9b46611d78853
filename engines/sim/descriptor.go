package sim

import (
	"fmt"
	"slices"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/simhw"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// FlagPreset is the simulator's own setting: a behaviour for tests
// (Presets).
const FlagPreset = "sim-preset"

// Preset is a behaviour of the simulated engine and GPU for tests, chosen
// with --sim-preset.
type Preset struct {
	Name, Doc string
	// Apply changes the engine's and the GPU's configuration (nil:
	// nothing).
	Apply func(*Config, *simtel.Config)
	// Build, when set, builds the engine from the configurations instead
	// of New (a deployment of several simulated parts).
	Build func(Config, simtel.Config) (engines.Engine, error)
}

// Presets are the simulator's behaviours for tests, in the order the help
// lists them: the one declaration the descriptor's setting, its check and
// its help come from.
func Presets() []Preset {
	return []Preset{
		{"drift", "J/token never settles", func(c *Config, _ *simtel.Config) { c.DriftPerRequest = 0.01 }, nil},
		{"no-release", "power never returns to baseline", func(_ *Config, g *simtel.Config) { g.ReleaseOffsetW = g.IdleW * 0.5 }, nil},
		// The frontier's knee within a small request set.
		{"small-batch", "16 slots and a small KV cache: the frontier's knee at low load", func(c *Config, _ *simtel.Config) { *c = SmallBatch(*c) }, nil},
		// Multi-turn and shared-prefix workloads: cached prompt tokens
		// skip prefill.
		{"prefix-cache", "a prefix cache: cached prompt tokens skip prefill", func(c *Config, _ *simtel.Config) { *c = WithPrefixCache(*c) }, nil},
		// Disaggregated prefill and decode on two simulated nodes.
		{Name: "disaggregated", Doc: "prefill and decode engines on two simulated nodes behind a router (KV transfer delay; the decode node's power clock 0.75 s ahead)",
			Build: func(c Config, g simtel.Config) (engines.Engine, error) {
				d, err := NewDisaggregated(DefaultDisagg(c, g))
				if err != nil {
					return nil, err
				}
				return d, nil
			}},
	}
}

// gpuValues and modelValues are the hardware presets as setting values.
func gpuValues() []engines.Value {
	var out []engines.Value
	for _, g := range simhw.GPUs() {
		out = append(out, engines.Value{Name: g.Name, Doc: g.Product})
	}
	return out
}

func modelValues() []engines.Value {
	var out []engines.Value
	for _, m := range simhw.Models() {
		out = append(out, engines.Value{Name: m.Name, Doc: fmt.Sprintf("%.1f B parameters, tensor parallel %d", m.Params/1e9, m.TensorParallel)})
	}
	return out
}

// Descriptor is the built-in simulated engine and GPU: Start builds the
// engine from the run's options (the seed, the model id, the quick mode
// and --sim-preset); its GPU follows it (GPUConfig). Everything it
// produces is labelled simulated.
func Descriptor() engines.Descriptor {
	var values []engines.Value
	for _, p := range Presets() {
		values = append(values, engines.Value{Name: p.Name, Doc: p.Doc})
	}
	return engines.Descriptor{
		Kind:      Kind,
		Doc:       "the built-in simulated engine and GPU",
		API:       engines.APIOpenAI,
		Simulated: true,
		Start:     newEngine,
		Flags:     []string{"model", FlagPreset, FlagGPU, FlagModel},
		Settings: []engines.Setting{
			{Flag: FlagPreset, Doc: "simulator behaviour for tests", Values: values},
			{Flag: FlagGPU, Doc: "the GPU the simulator models (joulebench devices --sim lists them; default: the toy model)", Values: gpuValues()},
			{Flag: FlagModel, Doc: "the model the simulator serves on it (joulebench devices --sim)", Values: modelValues()},
		},
		DefaultFamilies: DefaultFamilies(),
	}
}

// newEngine builds the simulated engine and its GPU's configuration from the
// run's options: seeded with Seed, Quick's speed (the GPU's time
// constants scaled to match), the preset of --sim-preset, serving Model
// when given, its log to Log.
func newEngine(o engines.Options) (engines.Engine, error) {
	cfg := DefaultConfig()
	cfg.Seed = o.Seed
	gpu := simtel.DefaultConfig()
	gpu.Seed = o.Seed
	if o.Quick {
		cfg = Quick(cfg)
		gpu.RiseTauS /= QuickSpeed
		gpu.DecayTauS /= QuickSpeed
	}
	var preset Preset
	if name := o.Settings[FlagPreset]; name != "" {
		i := slices.IndexFunc(Presets(), func(p Preset) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--%s %q: not a preset of the simulator", FlagPreset, name)
		}
		preset = Presets()[i]
		if preset.Apply != nil {
			preset.Apply(&cfg, &gpu)
		}
	}
	if g, m := o.Settings[FlagGPU], o.Settings[FlagModel]; g != "" || m != "" {
		var err error
		if cfg, gpu, err = WithHW(cfg, gpu, g, m); err != nil {
			return nil, err
		}
		if o.Quick { // the hardware model runs at real time: its GPUs' time constants too
			gpu.RiseTauS, gpu.DecayTauS = simtel.DefaultConfig().RiseTauS, simtel.DefaultConfig().DecayTauS
		}
	}
	if o.Model != "" {
		cfg.Model = o.Model
	}
	cfg.Log = o.Log
	if preset.Build != nil {
		return preset.Build(cfg, gpu)
	}
	e := New(cfg)
	e.gpu = gpu
	return e, nil
}

// GPUConfig is the configuration of the simulated GPU that follows this
// engine (the engine is its telemetry/sim.Load): the default, seeded as
// the engine, unless Start built it from a run's options.
func (e *Engine) GPUConfig() simtel.Config { return e.gpu }

// SetGPUSettings puts the simulated GPUs under a run's power limit and
// locked clocks (before the engine starts): its steps slow as they do, and
// the GPUs that follow it (GPUConfig) draw power under them.
func (e *Engine) SetGPUSettings(g *simtel.GPUSettings) {
	e.cfg.GPU, e.sched.cfg.GPU, e.gpu.Settings = g, g, g
}

// Expect is the identity the engine should report: the model it serves.
func (e *Engine) Expect() engines.Identity { return engines.Identity{Model: e.cfg.Model} }

var _ engines.Expecter = (*Engine)(nil)
