package kube

import (
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/kubeflags"
	"github.com/joulebench/joulebench/engines/sim"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Descriptor is the engine deployed as a pod of a Kubernetes cluster.
func Descriptor() engines.Descriptor {
	d := kubeflags.Base()
	d.Start = newEngine
	d.Validate = validate
	// A pod running joulebench serve-sim is the simulator.
	d.SimulatedBy = func(s engines.Settings) bool {
		if s.Bool(FlagSimulated) {
			return true
		}
		t, err := ReadTemplate(s[FlagPod])
		return err == nil && t.ServeSim
	}
	return d
}

// validate checks the pod manifest before anything runs.
func validate(o engines.Options) error {
	if o.Settings[FlagPod] == "" {
		return fmt.Errorf("--engine %s needs --%s FILE (the engine's Pod manifest)", Kind, FlagPod)
	}
	t, err := ReadTemplate(o.Settings[FlagPod])
	if err != nil {
		return err
	}
	if !t.ServeSim && !o.Settings.Bool(FlagSimulated) && o.Model == "" {
		return fmt.Errorf("--engine %s: --model is required for an engine other than joulebench serve-sim (the model requests carry)", Kind)
	}
	return nil
}

// newEngine builds the engine pod of a run's options.
func newEngine(o engines.Options) (engines.Engine, error) {
	if err := validate(o); err != nil {
		return nil, err
	}
	t, err := ReadTemplate(o.Settings[FlagPod])
	if err != nil {
		return nil, err
	}
	simulated := t.ServeSim || o.Settings.Bool(FlagSimulated)
	model := o.Model
	if simulated && model == "" {
		model = servedModel(t)
	}
	gpu := simtel.DefaultConfig()
	gpu.Seed = o.Seed
	if o.Quick {
		gpu.RiseTauS /= sim.QuickSpeed
		gpu.DecayTauS /= sim.QuickSpeed
	}
	e, err := New(Config{Template: t, Kubeconfig: o.Settings[FlagKubeconfig], Namespace: o.Settings[FlagNamespace],
		RunID: o.RunID, Model: model, Simulated: simulated, GPU: gpu, HTTP: o.HTTP, Log: o.Log})
	if err != nil {
		return nil, err
	}
	if simulated {
		return SimEngine{e}, nil
	}
	return e, nil
}

// servedModel is the model a serve-sim pod serves: its --model, else the
// simulator's default.
func servedModel(t *Template) string {
	c := t.Pod.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range argv {
		if a == "--model" && i+1 < len(argv) {
			return sim.ModelName(argv[i+1])
		}
		if v, ok := strings.CutPrefix(a, "--model="); ok {
			return sim.ModelName(v)
		}
	}
	return sim.ModelName("")
}
