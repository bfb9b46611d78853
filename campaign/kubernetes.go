package campaign

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/workflow"
)

// DefaultKubeImage is the joulebench image of the runs' pods on
// Kubernetes when --image names none: the project's released image.
const DefaultKubeImage = "ghcr.io/joulebench/joulebench:latest"

// KubernetesConfig is the `kubernetes:` section: how `sweep --executor
// kubernetes` (package campaign/kube) makes each run's Job.
type KubernetesConfig struct {
	// Namespace holds the Jobs, their pods and Secrets (default "default").
	Namespace string `yaml:"namespace"`
	// ServiceAccount runs the pods (default: the namespace's default).
	ServiceAccount string `yaml:"service_account"`
	// NodeSelector restricts the nodes a run's pod may go to.
	NodeSelector map[string]string `yaml:"node_selector"`
	// Tolerations let the pods onto tainted (GPU) nodes.
	Tolerations []Toleration `yaml:"tolerations"`
	// Resources are the run container's requests and limits (cpu, memory,
	// ephemeral-storage, ...), as Kubernetes quantities.
	Resources KubeResources `yaml:"resources"`
	// GPUs is the number of GPUs each run's pod asks for (GPUResource);
	// default: the model's tensor parallelism for a run that needs a GPU
	// (NeedsGPU), none for one that does not (the simulator, an engine URL).
	GPUs *int `yaml:"gpus"`
	// GPUResource is the extended resource the GPUs are counted in
	// (default nvidia.com/gpu).
	GPUResource string `yaml:"gpu_resource"`
	// PVC names a PersistentVolumeClaim mounted where the runs write their
	// archives; the sweep reads the archives back from it (through a pod)
	// instead of streaming each out of its run's pod.
	PVC string `yaml:"pvc"`
	// Deadline is each Job's activeDeadlineSeconds (0: none): a run still
	// going then is stopped and recorded failed, deadline exceeded.
	Deadline workflow.Duration `yaml:"deadline"`
	// ScheduleTimeout is how long a run's pod may stay unschedulable before
	// the run is recorded failed with the scheduler's message (default 10m).
	ScheduleTimeout workflow.Duration `yaml:"schedule_timeout"`
	// ProbeTimeout is how long a run's pod may stay unready while the
	// kubelet says its readiness probe cannot run at all (the image lacks
	// the tools of the archive hand-back: "executable file not found")
	// before the run is recorded failed with that message (default
	// DefaultProbeTimeout).
	ProbeTimeout workflow.Duration `yaml:"probe_timeout"`
	// Poll is how often the sweep looks at its Jobs' pods (default 2s).
	Poll workflow.Duration `yaml:"poll"`
}

// DefaultProbeTimeout is kubernetes.probe_timeout when it is not set.
const DefaultProbeTimeout = 2 * time.Minute

// Toleration is one pod toleration, as Kubernetes spells it.
type Toleration struct {
	Key               string `yaml:"key"`
	Operator          string `yaml:"operator"` // Equal (default) or Exists
	Value             string `yaml:"value"`
	Effect            string `yaml:"effect"` // NoSchedule, PreferNoSchedule, NoExecute or empty (all)
	TolerationSeconds *int64 `yaml:"toleration_seconds"`
}

// KubeResources are a container's requests and limits: resource name ->
// quantity ("4", "500m", "16Gi").
type KubeResources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

// GPUResourceName is the GPU resource a run's pod asks for.
func (k KubernetesConfig) GPUResourceName() string {
	if k.GPUResource == "" {
		return "nvidia.com/gpu"
	}
	return k.GPUResource
}

// NamespaceName is the namespace of the Jobs.
func (k KubernetesConfig) NamespaceName() string {
	if k.Namespace == "" {
		return "default"
	}
	return k.Namespace
}

// PollEvery is how often the sweep polls its pods.
func (k KubernetesConfig) PollEvery() time.Duration {
	if k.Poll.D() <= 0 {
		return 2 * time.Second
	}
	return k.Poll.D()
}

// ScheduleWait is how long a pod may stay unschedulable.
func (k KubernetesConfig) ScheduleWait() time.Duration {
	if k.ScheduleTimeout.D() <= 0 {
		return 10 * time.Minute
	}
	return k.ScheduleTimeout.D()
}

// ProbeWait is how long a pod whose readiness probe cannot run may stay
// unready.
func (k KubernetesConfig) ProbeWait() time.Duration {
	if k.ProbeTimeout.D() <= 0 {
		return DefaultProbeTimeout
	}
	return k.ProbeTimeout.D()
}

// KubeGPUs is the number of GPUs run r's pod asks for: kubernetes.gpus
// when set, else the run's tensor parallelism when it needs a GPU.
func (c *Campaign) KubeGPUs(r Run) int {
	if c.Kubernetes.GPUs != nil {
		return *c.Kubernetes.GPUs
	}
	if NeedsGPU(r.Config.Args) {
		return max(r.TP, 1)
	}
	return 0
}

var (
	tolerationOps     = map[string]bool{"": true, "Equal": true, "Exists": true}
	tolerationEffects = map[string]bool{"": true, "NoSchedule": true, "PreferNoSchedule": true, "NoExecute": true}
)

// validateKubernetes checks the kubernetes section against Kubernetes'
// own rules (names, label keys and values, quantities), so that a bad
// value is refused at its position before a Job is made.
func (c *Campaign) validateKubernetes(d *errSink, at func(path ...string) *yaml.Node) {
	k := c.Kubernetes
	validateKubeNames(d, at, k)
	validateKubeSelector(d, at, k)
	validateKubeTolerations(d, at, k)
	validateKubeResources(d, at, k)
	validateKubeDurations(d, at, k)
}

// validateKubeNames checks the namespace, service account and PVC names.
func validateKubeNames(d *errSink, at func(path ...string) *yaml.Node, k KubernetesConfig) {
	if k.Namespace != "" {
		for _, msg := range k8sNames.dns1123Label(k.Namespace) {
			d.Errorf(at("kubernetes", "namespace"), "kubernetes.namespace", "%q: %s", k.Namespace, msg)
		}
	}
	if k.ServiceAccount != "" {
		for _, msg := range k8sNames.dns1123Subdomain(k.ServiceAccount) {
			d.Errorf(at("kubernetes", "service_account"), "kubernetes.service_account", "%q: %s", k.ServiceAccount, msg)
		}
	}
	if k.PVC != "" {
		for _, msg := range k8sNames.dns1123Subdomain(k.PVC) {
			d.Errorf(at("kubernetes", "pvc"), "kubernetes.pvc", "%q: %s", k.PVC, msg)
		}
	}
}

// validateKubeSelector checks node_selector's label keys and values.
func validateKubeSelector(d *errSink, at func(path ...string) *yaml.Node, k KubernetesConfig) {
	keys := make([]string, 0, len(k.NodeSelector))
	for key := range k.NodeSelector {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		where := "kubernetes.node_selector." + key
		for _, msg := range k8sNames.qualifiedName(key) {
			d.Errorf(at("kubernetes", "node_selector", key), where, "label key %q: %s", key, msg)
		}
		for _, msg := range k8sNames.labelValue(k.NodeSelector[key]) {
			d.Errorf(at("kubernetes", "node_selector", key), where, "label value %q: %s", k.NodeSelector[key], msg)
		}
	}
}

// validateKubeTolerations checks each toleration as the API server would.
func validateKubeTolerations(d *errSink, at func(path ...string) *yaml.Node, k KubernetesConfig) {
	for i, t := range k.Tolerations {
		n := at("kubernetes", "tolerations", strconv.Itoa(i))
		where := fmt.Sprintf("kubernetes.tolerations[%d]", i)
		if !tolerationOps[t.Operator] {
			d.Errorf(n, where, "operator %q: expected Equal or Exists", t.Operator)
		}
		if t.Operator == "Exists" && t.Value != "" {
			d.Errorf(n, where, "operator Exists takes no value (got %q)", t.Value)
		}
		if t.Key == "" && t.Operator != "Exists" {
			d.Errorf(n, where, "an empty key needs operator Exists (it tolerates every taint)")
		}
		if t.Key != "" {
			for _, msg := range k8sNames.qualifiedName(t.Key) {
				d.Errorf(n, where, "key %q: %s", t.Key, msg)
			}
		}
		if !tolerationEffects[t.Effect] {
			d.Errorf(n, where, "effect %q: expected NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
		}
		if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
			d.Errorf(n, where, "toleration_seconds applies to effect NoExecute only")
		}
	}
}

// validateKubeResources checks the resource names and quantities, and the GPUs.
func validateKubeResources(d *errSink, at func(path ...string) *yaml.Node, k KubernetesConfig) {
	for _, part := range []struct {
		name string
		m    map[string]string
	}{{"requests", k.Resources.Requests}, {"limits", k.Resources.Limits}} {
		names := make([]string, 0, len(part.m))
		for n := range part.m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			n := at("kubernetes", "resources", part.name, name)
			where := "kubernetes.resources." + part.name + "." + name
			if name == k.GPUResourceName() {
				d.Errorf(n, where, "the GPUs are kubernetes.gpus (default: the model's tp for a run that needs a GPU), not a resource")
			}
			for _, msg := range k8sNames.qualifiedName(name) {
				d.Errorf(n, where, "resource name %q: %s", name, msg)
			}
			if err := k8sNames.quantity(part.m[name]); err != nil {
				d.Errorf(n, where, "quantity %q: %v (e.g. 4, 500m, 16Gi)", part.m[name], err)
			}
		}
	}
	if k.GPUs != nil && *k.GPUs < 0 {
		d.Errorf(at("kubernetes", "gpus"), "kubernetes.gpus", "must be 0 or more, got %d", *k.GPUs)
	}
	if k.GPUResource != "" {
		for _, msg := range k8sNames.qualifiedName(k.GPUResource) {
			d.Errorf(at("kubernetes", "gpu_resource"), "kubernetes.gpu_resource", "%q: %s", k.GPUResource, msg)
		}
	}
}

// validateKubeDurations checks the deadline, schedule timeout and poll.
func validateKubeDurations(d *errSink, at func(path ...string) *yaml.Node, k KubernetesConfig) {
	for _, dur := range []struct {
		name string
		v    time.Duration
	}{{"deadline", k.Deadline.D()}, {"schedule_timeout", k.ScheduleTimeout.D()}, {"probe_timeout", k.ProbeTimeout.D()}, {"poll", k.Poll.D()}} {
		if dur.v < 0 {
			d.Errorf(at("kubernetes", dur.name), "kubernetes."+dur.name, "must not be negative, got %s", dur.v)
		}
	}
	if k.Deadline.D() > 0 && k.Deadline.D() < time.Second {
		d.Errorf(at("kubernetes", "deadline"), "kubernetes.deadline", "at least 1s (Kubernetes counts whole seconds), got %s", k.Deadline.D())
	}
}
