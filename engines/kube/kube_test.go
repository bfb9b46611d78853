package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/syncbuf"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// fakeCluster is a fake API server that names pods from their
// generateName, as the real one does.
func fakeCluster() *fake.Clientset {
	c := fake.NewClientset()
	var n atomic.Int64
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n.Add(1))
		}
		return false, nil, nil
	})
	return c
}

// simServer serves /health (200 once ready is set) and /metrics with the
// activity the simulated GPUs follow.
func simServer(t *testing.T, ready *atomic.Bool) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if !ready.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		case "/metrics":
			// The simulator writes its slots beside its activity.
			fmt.Fprintln(w, `sim:num_slots{model_name="m"} 4`)
			_ = simtel.WriteActivity(w, simtel.Activity{Phase: simtel.PhaseReady, Running: 2, Slots: 4, MemFrac: 0.9}, "")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return srv, p
}

func testEngine(t *testing.T, c *fake.Clientset, port int) *Engine {
	t.Helper()
	tp, err := ParseTemplate("pod.yaml", []byte(strings.ReplaceAll(goodPod, "8000", strconv.Itoa(port))))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Template: tp, Client: c, Namespace: "bench", RunID: "run 2026/1", Model: "sim-llm-8b",
		Simulated: true, Poll: 5 * time.Millisecond, Log: &syncbuf.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// setStatus sets the created pod's status.
func setStatus(t *testing.T, c *fake.Clientset, name string, edit func(*corev1.Pod)) {
	t.Helper()
	pods := c.CoreV1().Pods("bench")
	pod, err := pods.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(pod)
	if _, err := pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readyPod(pod *corev1.Pod) {
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "127.0.0.1"
	pod.Spec.NodeName = "node-1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "engine", Ready: true,
		ImageID: "docker.io/library/joulebench@sha256:abc",
		State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

// TestLifecycle: Start creates the pod (generated name, the run's
// labels, never restarted); it is ready only once Ready and healthy; its
// GPUs follow its /metrics while it runs; Stop deletes it and returns
// only once it is gone, and the GPUs idle from then on.
func TestLifecycle(t *testing.T) {
	var healthy atomic.Bool
	_, port := simServer(t, &healthy)
	c := fakeCluster()
	e := testEngine(t, c, port)
	sim := SimEngine{e}
	if a := sim.Activity(); a.Phase != simtel.PhaseOff {
		t.Fatalf("before the pod: %+v, want off", a)
	}
	// The first delete (Stop's) only marks the pod terminating: Stop
	// waits. In place before Start: the fake's reactor list may not change
	// while the engine's monitor uses the client.
	var deletes atomic.Int64
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return deletes.Add(1) == 1, nil, nil
	})
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	name := e.PodName()
	pod, err := c.CoreV1().Pods("bench").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "sim-engine-") || pod.Labels[LabelRunID] != "run-2026-1" || pod.Labels["team"] != "energy" ||
		pod.Labels[LabelManagedBy] != "joulebench" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("pod %s labels %v restart %s", name, pod.Labels, pod.Spec.RestartPolicy)
	}
	ready := make(chan error, 1)
	go func() { ready <- e.WaitReady(ctx, 10*time.Second) }()
	// Ready but not healthy yet: still waiting.
	setStatus(t, c, name, readyPod)
	select {
	case err := <-ready:
		t.Fatalf("ready before the health endpoint answered: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	healthy.Store(true)
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	if got, want := e.BaseURL(), "http://127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Fatalf("BaseURL %q, want %q", got, want)
	}
	info := e.Info()
	if info.Extra["pod"] != name || info.Extra["node"] != "node-1" || info.Extra["image_id"] != "docker.io/library/joulebench@sha256:abc" ||
		info.Extra["simulated"] != true || info.Kind != Kind {
		t.Fatalf("info %+v", info)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sim.Activity().Phase != simtel.PhaseReady && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a := sim.Activity(); a.Phase != simtel.PhaseReady || a.Running != 2 || a.Slots != 4 {
		t.Fatalf("while running: %+v, want ready with 2 of 4 running", a)
	}

	stopped := make(chan time.Time, 1)
	go func() {
		at, err := e.Stop(ctx, 2*time.Second)
		if err != nil {
			t.Error(err)
		}
		stopped <- at
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the pod still exists")
	case <-time.After(50 * time.Millisecond):
	}
	before := time.Now()
	if err := c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "bench", name); err != nil {
		t.Fatal(err)
	}
	at := <-stopped
	if at.Before(before) {
		t.Fatalf("gone at %v, before the pod was deleted (%v)", at, before)
	}
	select {
	case <-e.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	if a := sim.Activity(); a.Phase != simtel.PhaseOff {
		t.Fatalf("after the pod is gone: %+v, want off", a)
	}
	if err := e.ExitError(); err != nil {
		t.Fatalf("ExitError after Stop: %v", err)
	}
	// engine.log: what happened to the pod, and the container's own
	// output (the fake API server's log is "fake logs").
	log := e.cfg.Log.(*syncbuf.Buffer).String()
	for _, want := range []string{"INFO created pod bench/" + name, "scheduled on node node-1", "ready at http://127.0.0.1:", "fake logs", "INFO pod bench/" + name + " gone"} {
		if !strings.Contains(log, want) {
			t.Errorf("engine.log lacks %q:\n%s", want, log)
		}
	}
}

// TestStartFailures: a pod that cannot run fails the wait with the
// reason the cluster gives.
func TestStartFailures(t *testing.T) {
	cases := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"image pull", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "engine", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}}
		}, `container engine: ImagePullBackOff: Back-off pulling image "nope"`},
		{"unschedulable", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}
		}, "cannot be scheduled (Unschedulable): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."},
		{"crash", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "engine", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
		}, "pod failed; container engine exited with status 2 (Error)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCluster()
			e := testEngine(t, c, 1)
			ctx := context.Background()
			if err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			setStatus(t, c, e.PodName(), tc.edit)
			err := e.WaitReady(ctx, 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bench/"+e.PodName()) {
				t.Fatalf("WaitReady = %v, want the pod and %q", err, tc.want)
			}
			if _, err := e.Stop(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CoreV1().Pods("bench").Get(ctx, e.PodName(), metav1.GetOptions{}); err == nil {
				t.Fatal("the failed pod was not deleted")
			}
		})
	}
}

// TestStopContextEnds: a pod that does not go away before ctx ends is
// deleted at once (grace period 0) and Stop says it was not gone.
func TestStopContextEnds(t *testing.T) {
	c := fakeCluster()
	e := testEngine(t, c, 1)
	ctx := context.Background()
	// The reactor is in place before Start: the fake's reactor list may
	// not change while the engine's monitor uses the client.
	var forced atomic.Bool
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds
		if g != nil && *g == 0 {
			forced.Store(true)
			return false, nil, nil
		}
		return true, nil, nil
	})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := e.Stop(sctx, 0); err == nil || !strings.Contains(err.Error(), "not gone") {
		t.Fatalf("Stop = %v, want not gone", err)
	}
	if !forced.Load() {
		t.Fatal("the pod was not deleted with grace period 0")
	}
}

// TestDescriptor: the kind needs --k8s-pod; a real engine's pod needs
// --model; a serve-sim pod is simulated, its model from its command.
func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if err := d.Validate(engines.Options{}); err == nil || !strings.Contains(err.Error(), "--k8s-pod") {
		t.Fatalf("no --k8s-pod: %v", err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := writeFile(p, text); err != nil {
			t.Fatal(err)
		}
		return p
	}
	simPod := write("sim.yaml", strings.Replace(goodPod, `"--quick"]`, `"--quick", "--model", "tiny"]`, 1))
	e, err := d.Start(engines.Options{Settings: engines.Settings{FlagPod: simPod}, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(SimEngine); !ok || !e.Simulated() {
		t.Fatalf("serve-sim pod: %T simulated %v, want a simulated SimEngine", e, e.Simulated())
	}
	if m := e.(SimEngine).RequestModel(); m != "sim-tiny" {
		t.Fatalf("model %q, want sim-tiny (the simulator's name for tiny)", m)
	}
	realPod := write("vllm.yaml", strings.Replace(goodPod, `command: ["joulebench", "serve-sim", "--listen", ":8000", "--quick"]`, `args: ["--port", "8000"]`, 1))
	if err := d.Validate(engines.Options{Settings: engines.Settings{FlagPod: realPod}}); err == nil || !strings.Contains(err.Error(), "--model is required") {
		t.Fatalf("real engine without --model: %v", err)
	}
	e, err = d.Start(engines.Options{Common: engines.Common{Model: "m"}, Settings: engines.Settings{FlagPod: realPod}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*Engine); !ok || e.Simulated() {
		t.Fatalf("real engine pod: %T simulated %v", e, e.Simulated())
	}
	// The run asks before anything is built: simulated by the
	// manifest's command, or by --k8s-simulated.
	for _, c := range []struct {
		s    engines.Settings
		want bool
	}{
		{engines.Settings{FlagPod: simPod}, true},
		{engines.Settings{FlagPod: realPod}, false},
		{engines.Settings{FlagPod: realPod, FlagSimulated: "true"}, true},
		{engines.Settings{FlagPod: dir + "/none.yaml"}, false},
	} {
		if got := d.SimulatedBy(c.s); got != c.want {
			t.Errorf("SimulatedBy(%v) = %v, want %v", c.s, got, c.want)
		}
	}
}
