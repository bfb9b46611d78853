// Package kubeflags names the kubernetes engine kind, its flags and their
// documentation without the Kubernetes client: the default joulebench
// binary lists the kind and accepts its flags, while the client itself
// (package engines/kube, client-go) is linked only into joulebench-kube,
// the build with the kubernetes tag (docs/kubernetes.md).
package kubeflags

import (
	"errors"
	"fmt"

	"github.com/joulebench/joulebench/engines"
)

// Kind is the engine kind.
const Kind = "kubernetes"

// The kind's settings (flags).
const (
	FlagPod        = "k8s-pod"
	FlagKubeconfig = "kubeconfig"
	FlagNamespace  = "k8s-namespace"
	FlagSimulated  = "k8s-simulated"
)

// HelperName is the name of the joulebench build that holds the
// Kubernetes client.
const HelperName = "joulebench-kube"

// HelperEnv names the joulebench-kube executable when it is neither beside
// joulebench nor in PATH.
const HelperEnv = "JOULEBENCH_KUBE"

// ErrNotBuiltIn is the error of a Kubernetes feature asked of a build
// without the Kubernetes client; its text says how to get one.
var ErrNotBuiltIn = errors.New("this joulebench is built without the Kubernetes client (it keeps every other command " +
	"small); " + HelperName + " is the build that has it: go build -tags kubernetes -o " + HelperName +
	" ./cmd/joulebench, put beside joulebench or in PATH (or named in " + HelperEnv + "); " +
	"joulebench hands it every command that asks for Kubernetes (docs/kubernetes.md)")

// Base is the kind's descriptor without what needs the client: kind, API,
// documentation, flags and settings. Start, Validate and SimulatedBy are
// the caller's.
func Base() engines.Descriptor {
	return engines.Descriptor{
		Kind:  Kind,
		Doc:   "an engine the run deploys as its own pod on a Kubernetes cluster (--k8s-pod)",
		API:   engines.APIOpenAI,
		Flags: []string{"model", FlagPod, FlagKubeconfig, FlagNamespace, FlagSimulated},
		Settings: []engines.Setting{
			{Flag: FlagPod, Free: true, Doc: "engine kubernetes: the engine's Pod manifest (YAML): image, command, containerPort, resources, readinessProbe"},
			{Flag: FlagKubeconfig, Free: true, Doc: "engine kubernetes: kubeconfig file of the cluster (default: KUBECONFIG, the in-cluster configuration, ~/.kube/config)"},
			{Flag: FlagNamespace, Free: true, Doc: "engine kubernetes: namespace of the engine's pod (default: the manifest's, else default)"},
			{Flag: FlagSimulated, Doc: "engine kubernetes: the pod's engine is joulebench serve-sim even if its command does not say so (simulated GPUs follow it)"},
		},
	}
}

// Unavailable is the kind in a build without the client: listed with its
// flags, and refused (ErrNotBuiltIn) when a run is validated or started
// with it.
func Unavailable() engines.Descriptor {
	d := Base()
	d.Validate = func(engines.Options) error { return fmt.Errorf("--engine %s: %w", Kind, ErrNotBuiltIn) }
	d.Start = func(o engines.Options) (engines.Engine, error) { return nil, d.Validate(o) }
	return d
}
