// Package kube is the engine kind "kubernetes": an engine the run deploys
// as its own pod on a Kubernetes cluster, from a Pod manifest template
// (--k8s-pod). Start creates the pod; it is ready once the pod is Ready
// and the engine's health endpoint answers at http://<podIP>:<port>, so
// the run's startup stage covers scheduling, the image pull and the model
// load. Stop deletes the pod and returns once it is gone, so the release
// stage covers its termination. A pod that cannot run (an image that
// cannot be pulled, no node to schedule it on, a crashing container)
// fails the start with the reason.
//
// A pod running `joulebench serve-sim` is a simulated engine: the run's
// simulated GPUs follow its activity, read from its /metrics
// (telemetry/sim.Remote), and idle before the pod exists and once it is
// gone. A real engine's power comes from the cluster's dcgm-exporter
// through the prometheus source (docs/kubernetes.md).
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/kubeflags"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/engines/vllm"
	"github.com/joulebench/joulebench/internal/kubeconf"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Kind is the engine kind.
const Kind = kubeflags.Kind

// The kind's settings (flags).
const (
	FlagPod        = kubeflags.FlagPod
	FlagKubeconfig = kubeflags.FlagKubeconfig
	FlagNamespace  = kubeflags.FlagNamespace
	FlagSimulated  = kubeflags.FlagSimulated
)

// Labels of an engine pod.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelRunID     = "joulebench.dev/run-id"
	LabelRole      = "joulebench.dev/role"
)

// DefaultPoll is how often the pod's state, and a simulated engine's
// /metrics, are read.
const DefaultPoll = 250 * time.Millisecond

// Config is an engine pod to deploy.
type Config struct {
	Template *Template
	// Client is the cluster's API (nil: built at Start from Kubeconfig,
	// else KUBECONFIG, else the in-cluster configuration, else
	// ~/.kube/config).
	Client     kubernetes.Interface
	Kubeconfig string
	// Namespace ("" = the template's, else "default").
	Namespace string
	RunID     string
	// Model is the model requests carry.
	Model string
	// Simulated is true for a pod running joulebench serve-sim: the run's
	// simulated GPUs follow it (GPU).
	Simulated bool
	GPU       simtel.Config
	HTTP      *http.Client
	// Log receives what happens to the pod (engine.log).
	Log io.Writer
	// Poll is the interval of the pod's and the engine's reads (0:
	// DefaultPoll).
	Poll time.Duration
}

// Engine is an engine pod. Build it with New; it runs once.
type Engine struct {
	cfg   Config
	logMu sync.Mutex

	mu        sync.Mutex
	client    kubernetes.Interface
	ns, name  string
	ip, node  string
	imageID   string
	image     string
	started   bool
	stopping  bool
	exitedAt  time.Time
	exitErr   error
	cancelMon context.CancelFunc
	following bool

	exited   chan struct{}
	exitOnce sync.Once
	remote   simtel.Remote
}

var (
	_ engines.Engine        = (*Engine)(nil)
	_ engines.MetricsSource = (*Engine)(nil)
	_ engines.ModelNamer    = (*Engine)(nil)
	_ engines.Expecter      = (*Engine)(nil)
)

// New returns the engine of cfg (nothing is created until Start).
func New(cfg Config) (*Engine, error) {
	if cfg.Template == nil {
		return nil, fmt.Errorf("--%s is required: the engine's Pod manifest", FlagPod)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Namespace == "" {
		cfg.Namespace = cfg.Template.Pod.Namespace
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	return &Engine{cfg: cfg, exited: make(chan struct{})}, nil
}

// SimEngine is an engine pod running the simulator: the run's simulated
// GPUs follow its activity (telemetry/sim.Load).
type SimEngine struct{ *Engine }

var _ simtel.Load = SimEngine{}

// Activity is the pod engine's activity as its /metrics last said;
// PhaseOff before it answers and once the pod is gone.
func (e SimEngine) Activity() simtel.Activity { return e.remote.Activity() }

// GPUConfig is the configuration of the simulated GPUs that follow the
// pod's engine.
func (e SimEngine) GPUConfig() simtel.Config { return e.cfg.GPU }

// SetGPUSettings puts the simulated GPUs under a run's power limit and
// clocks (the engine in the pod does not slow with them).
func (e SimEngine) SetGPUSettings(g *simtel.GPUSettings) { e.cfg.GPU.Settings = g }

// Kind returns Kind.
func (e *Engine) Kind() string { return Kind }

// DefaultFamilies are the /metrics families kept by default: the
// simulator's for a serve-sim pod, else those of the engines a pod may
// run (vLLM, SGLang, llama.cpp).
func (e *Engine) DefaultFamilies() []string {
	if e.cfg.Simulated {
		return sim.DefaultFamilies()
	}
	return slices.Concat(vllm.DefaultFamilies(), sglang.DefaultFamilies(), llamacpp.DefaultFamilies())
}

var _ engines.FamiliesDefaulter = (*Engine)(nil)

// Simulated is true for a pod running joulebench serve-sim.
func (e *Engine) Simulated() bool { return e.cfg.Simulated }

// API returns "openai".
func (e *Engine) API() string { return engines.APIOpenAI }

// RequestModel is the model requests carry.
func (e *Engine) RequestModel() string { return e.cfg.Model }

// Expect is the identity the engine should report: the model.
func (e *Engine) Expect() engines.Identity { return engines.Identity{Model: e.cfg.Model} }

// Exited is closed once the pod is gone or its engine ended.
func (e *Engine) Exited() <-chan struct{} { return e.exited }

// BaseURL is http://<podIP>:<port> once the pod has an address.
func (e *Engine) BaseURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.baseURL()
}

func (e *Engine) baseURL() string {
	if e.ip == "" {
		return ""
	}
	host := e.ip
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d", host, e.cfg.Template.Port)
}

// MetricsURL is the engine's Prometheus endpoint.
func (e *Engine) MetricsURL() string {
	if u := e.BaseURL(); u != "" {
		return u + "/metrics"
	}
	return ""
}

// PodName is the created pod's name ("" before Start).
func (e *Engine) PodName() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.name
}

func (e *Engine) logf(format string, args ...any) {
	if e.cfg.Log == nil {
		return
	}
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + " " + fmt.Sprintf(format, args...) + "\n"
	e.logMu.Lock()
	_, _ = io.WriteString(e.cfg.Log, line)
	e.logMu.Unlock()
}

// restConfig is the cluster's configuration: the kubeconfig file given,
// else KUBECONFIG, else the in-cluster configuration, else ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	return kubeconf.REST(kubeconfig, FlagKubeconfig)
}

// labelValue makes s a valid label value (63 characters of [A-Za-z0-9-_.],
// alphanumeric at both ends).
func labelValue(s string) string {
	s = regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

// Start creates the engine's pod; it returns once the pod exists, not
// when it is ready.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("kubernetes engine: already started")
	}
	e.started = true
	e.mu.Unlock()
	client := e.cfg.Client
	if client == nil {
		rc, err := restConfig(e.cfg.Kubeconfig)
		if err != nil {
			return err
		}
		if client, err = kubernetes.NewForConfig(rc); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
	}
	pod := e.cfg.Template.Pod.DeepCopy()
	prefix := pod.Name
	if prefix == "" {
		prefix = pod.GenerateName
	}
	if prefix == "" {
		prefix = "joulebench-engine-"
	} else if !strings.HasSuffix(prefix, "-") {
		prefix += "-"
	}
	pod.ObjectMeta = metav1.ObjectMeta{GenerateName: prefix, Namespace: e.cfg.Namespace,
		Labels: pod.Labels, Annotations: pod.Annotations}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelManagedBy] = "joulebench"
	pod.Labels[LabelRole] = "engine"
	if id := labelValue(e.cfg.RunID); id != "" {
		pod.Labels[LabelRunID] = id
	}
	// The run deletes the pod at its end: it is never restarted in place
	// (a crash fails the run).
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	created, err := client.CoreV1().Pods(e.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes engine: create pod from %s in namespace %s: %w", e.cfg.Template.File, e.cfg.Namespace, err)
	}
	e.mu.Lock()
	e.client, e.ns, e.name = client, e.cfg.Namespace, created.Name
	e.image = e.cfg.Template.Pod.Spec.Containers[0].Image
	e.mu.Unlock()
	e.logf("INFO created pod %s/%s (image %s) from %s", e.cfg.Namespace, created.Name, e.image, e.cfg.Template.File)
	mon, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.cancelMon = cancel
	e.mu.Unlock()
	go e.monitor(mon)
	return nil
}

// monitor reads the pod's state at each Poll: its address and node, the
// engine's activity (a simulated one), and whether it ended on its own.
func (e *Engine) monitor(ctx context.Context) {
	t := time.NewTicker(e.cfg.Poll)
	defer t.Stop()
	for {
		pod, err := e.get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			e.remote.Gone()
			if !e.isStopping() {
				e.exit(fmt.Errorf("engine pod %s deleted by someone else", e.ref()))
			}
			return
		case err == nil:
			e.observe(pod)
			if e.startFollowing(pod) {
				go e.copyLogs(ctx, pod.Spec.Containers[0].Name)
			}
			if why := ended(pod); why != "" && !e.isStopping() {
				e.remote.Gone()
				e.exit(fmt.Errorf("engine pod %s: %s", e.ref(), why))
			}
		}
		if e.cfg.Simulated {
			if u := e.MetricsURL(); u != "" {
				a, err := simtel.ReadActivity(ctx, e.cfg.HTTP, u)
				if err != nil {
					a = simtel.Activity{}
				}
				e.remote.Set(a)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// startFollowing reports, once, that the engine's container has started
// (its log can be read).
func (e *Engine) startFollowing(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.following || e.cfg.Log == nil {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == pod.Spec.Containers[0].Name && (cs.State.Running != nil || cs.State.Terminated != nil) {
			e.following = true
			return true
		}
	}
	return false
}

// copyLogs copies the engine container's output into engine.log as it
// comes, until the container ends or ctx is done.
func (e *Engine) copyLogs(ctx context.Context, container string) {
	e.mu.Lock()
	client, ns, name := e.client, e.ns, e.name
	e.mu.Unlock()
	rc, err := client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.logf("WARN reading the log of pod %s/%s: %v", ns, name, err)
		}
		return
	}
	defer rc.Close()
	_, _ = io.Copy(logWriter{e}, rc)
}

// logWriter writes into engine.log between the engine's own lines.
type logWriter struct{ e *Engine }

func (w logWriter) Write(p []byte) (int, error) {
	w.e.logMu.Lock()
	defer w.e.logMu.Unlock()
	return w.e.cfg.Log.Write(p)
}

func (e *Engine) get(ctx context.Context) (*corev1.Pod, error) {
	e.mu.Lock()
	client, ns, name := e.client, e.ns, e.name
	e.mu.Unlock()
	return client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func (e *Engine) ref() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ns + "/" + e.name
}

func (e *Engine) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// observe records the pod's address, node and image digest.
func (e *Engine) observe(pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if pod.Status.PodIP != "" {
		e.ip = pod.Status.PodIP
	}
	if pod.Spec.NodeName != "" {
		e.node = pod.Spec.NodeName
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == pod.Spec.Containers[0].Name && cs.ImageID != "" {
			e.imageID = cs.ImageID
		}
	}
}

// failing are the waiting reasons of a container that will not start
// without someone changing something.
var failing = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true,
	"RunContainerError": true,
}

// ended says why a pod will never serve ("" while it may): it ended, it
// cannot be scheduled, its engine's container cannot start or exited.
func ended(pod *corev1.Pod) string {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		why := "pod " + strings.ToLower(string(pod.Status.Phase))
		if pod.Status.Reason != "" {
			why += ": " + pod.Status.Reason
		}
		if pod.Status.Message != "" {
			why += ": " + pod.Status.Message
		}
		if c := containerEnd(pod); c != "" {
			why += "; " + c
		}
		return why
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "cannot be scheduled (Unschedulable): " + c.Message
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && failing[w.Reason] {
			why := fmt.Sprintf("container %s: %s", cs.Name, w.Reason)
			if w.Message != "" {
				why += ": " + w.Message
			}
			return why
		}
	}
	return containerEnd(pod)
}

// containerEnd says how a container of pod ended ("" when none did).
func containerEnd(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			why := fmt.Sprintf("container %s exited with status %d", cs.Name, t.ExitCode)
			if t.Reason != "" {
				why += " (" + t.Reason + ")"
			}
			if t.Message != "" {
				why += ": " + t.Message
			}
			return why
		}
	}
	return ""
}

// ready reports whether the pod is Ready.
func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitReady blocks until the pod is Ready and the engine's health
// endpoint answers 200 at its address, the pod fails (the reason), ctx is
// done or timeout (> 0) passes.
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	e.mu.Lock()
	started := e.client != nil
	e.mu.Unlock()
	if !started {
		return errors.New("kubernetes engine: not started")
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	t := time.NewTicker(e.cfg.Poll)
	defer t.Stop()
	logged := map[string]bool{}
	for {
		pod, err := e.get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("engine pod %s: deleted before it was ready", e.ref())
		case err == nil:
			e.observe(pod)
			if why := ended(pod); why != "" {
				return fmt.Errorf("engine pod %s: %s", e.ref(), why)
			}
			if pod.Spec.NodeName != "" && !logged["node"] {
				logged["node"] = true
				e.logf("INFO pod %s scheduled on node %s", pod.Name, pod.Spec.NodeName)
			}
			if ready(pod) && e.healthy(ctx) {
				e.logf("INFO pod %s ready at %s", pod.Name, e.BaseURL())
				return nil
			}
		case ctx.Err() == nil:
			e.logf("WARN reading pod %s: %v", e.ref(), err)
		}
		select {
		case <-e.exited:
			return fmt.Errorf("engine pod %s: ended before it was ready: %w", e.ref(), e.ExitError())
		case <-ctx.Done():
			if timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("engine pod %s: not ready after %s", e.ref(), timeout)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// healthy reports whether the engine's health endpoint answers 200.
func (e *Engine) healthy(ctx context.Context) bool {
	u := e.BaseURL()
	if u == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+e.cfg.Template.HealthPath, nil)
	if err != nil {
		return false
	}
	resp, err := e.cfg.HTTP.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Identity asks the engine in the pod: the simulator's /v1/models and
// /version, any other engine as an OpenAI-compatible server.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	base := e.BaseURL()
	if base == "" {
		return engines.Identity{}, errors.New("kubernetes engine: the pod has no address yet")
	}
	if e.cfg.Simulated {
		return sim.IdentityAt(ctx, e.cfg.HTTP, base)
	}
	x, err := external.New(external.Config{URL: base, Kind: Kind, Model: e.cfg.Model, HTTP: e.cfg.HTTP})
	if err != nil {
		return engines.Identity{}, err
	}
	return x.Identity(ctx)
}

// Stop deletes the pod (grace, when > 0, as its termination grace
// period) and returns once it is gone: the time the API server first
// answered NotFound. When ctx ends first the pod is deleted at once
// (grace period 0) and ctx's error returned.
func (e *Engine) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	e.mu.Lock()
	if e.client == nil {
		e.mu.Unlock()
		return time.Time{}, errors.New("kubernetes engine: not started")
	}
	e.stopping = true
	client, ns, name := e.client, e.ns, e.name
	e.mu.Unlock()
	opts := metav1.DeleteOptions{}
	if grace > 0 {
		s := int64(max(1, grace.Round(time.Second)/time.Second))
		opts.GracePeriodSeconds = &s
	}
	e.logf("INFO deleting pod %s/%s", ns, name)
	pods := client.CoreV1().Pods(ns)
	if err := pods.Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
		return time.Time{}, fmt.Errorf("kubernetes engine: delete pod %s/%s: %w", ns, name, err)
	}
	t := time.NewTicker(e.cfg.Poll)
	defer t.Stop()
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			gone := time.Now()
			e.remote.Gone()
			e.logf("INFO pod %s/%s gone", ns, name)
			e.finish(gone, nil)
			return gone, nil
		}
		select {
		case <-ctx.Done():
			zero := int64(0)
			// A bounded, detached call: the pod must not outlive the run.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			ferr := pods.Delete(fctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			cancel()
			e.logf("WARN pod %s/%s forced (grace period 0): %v", ns, name, ferr)
			return time.Time{}, fmt.Errorf("kubernetes engine: pod %s/%s not gone: %w", ns, name, ctx.Err())
		case <-t.C:
		}
	}
}

// exit records that the engine ended on its own.
func (e *Engine) exit(err error) { e.finish(time.Now(), err) }

func (e *Engine) finish(at time.Time, err error) {
	e.exitOnce.Do(func() {
		e.mu.Lock()
		e.exitedAt, e.exitErr = at, err
		cancel := e.cancelMon
		e.mu.Unlock()
		if cancel != nil && err == nil {
			cancel()
		}
		if err != nil {
			e.logf("ERROR %v", err)
		}
		close(e.exited)
	})
}

// ExitError says why the engine ended on its own (nil when it did not).
func (e *Engine) ExitError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exitErr
}

var _ engines.ExitReporter = (*Engine)(nil)

// Info describes the engine for run.json: the template's command, the
// pod, its node, the image and its digest.
func (e *Engine) Info() record.EngineInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.cfg.Template.Pod.Spec.Containers[0]
	extra := map[string]any{
		"pod":       e.name,
		"namespace": e.ns,
		"node":      e.node,
		"image":     c.Image,
		"image_id":  e.imageID,
		"template":  e.cfg.Template.File,
	}
	if e.cfg.Simulated {
		extra["simulated"] = true
	}
	return record.EngineInfo{
		Kind:        Kind,
		URL:         e.baseURL(),
		API:         engines.APIOpenAI,
		Managed:     true,
		Command:     append(append([]string{}, c.Command...), c.Args...),
		Model:       e.cfg.Model,
		ServedModel: e.cfg.Model,
		Extra:       extra,
	}
}
