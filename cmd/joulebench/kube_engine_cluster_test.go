package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joulebench/joulebench/archive/record"
	enginekube "github.com/joulebench/joulebench/engines/kube"
)

// simEnginePod is an engine pod running joulebench serve-sim from the
// cluster's local image (imagePullPolicy Never: no registry).
const simEnginePod = `apiVersion: v1
kind: Pod
metadata:
  name: sim-engine
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: engine
    image: %s
    imagePullPolicy: Never
    command: ["joulebench", "serve-sim", "--listen", ":8000", "--quick"]
    ports:
    - containerPort: 8000
    readinessProbe:
      httpGet: {path: /health, port: 8000}
      periodSeconds: 1
`

// A run deploys the simulated engine as its own pod (issue 37 item 4):
// run.json records the pod, its node and image digest; the startup stage
// runs from the pod's creation to ready, the release stage from its
// deletion past the moment it is gone, both with GPU energy; the pod is
// gone afterwards.
func TestKubernetesEnginePod(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(pod, []byte(fmt.Sprintf(simEnginePod, image)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := append([]string{"run", "benchmark-1.5", "--engine", "kubernetes", "--k8s-pod", pod,
		"--kubeconfig", kubeconfig, "--k8s-namespace", ns, "--out", out}, fastSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = kubeChildEnv(t)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "SIMULATED") {
		t.Errorf("the run is not labelled SIMULATED:\n%s", b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m record.Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	x := m.Engine.Extra
	if m.Engine.Kind != enginekube.Kind || !m.Simulated || x["pod"] == "" || x["node"] == "" || x["image"] != image ||
		!strings.Contains(fmt.Sprint(x["image_id"]), "sha256:") || x["namespace"] != ns {
		t.Fatalf("run.json engine %+v simulated %v", m.Engine, m.Simulated)
	}
	stage := map[string]record.Stage{}
	for _, s := range m.Stages {
		stage[s.Name] = s
	}
	event := map[string]float64{}
	for _, e := range m.Events {
		event[e.Name] = e.T
	}
	st, rel := stage["startup"], stage["release"]
	created, readyAt, gone := event["engine_started"], event["engine_ready"], event["engine_exited"]
	// The startup stage covers the pod from its creation (Start) to
	// ready; the release stage its deletion until it was gone.
	if created == 0 || readyAt == 0 || gone == 0 || st.Start > created || readyAt <= created || st.End < readyAt ||
		rel.Start == 0 || rel.Start > gone || rel.End < gone {
		t.Fatalf("stages %+v, events %+v: want startup over creation..ready, release over deletion..gone", m.Stages, m.Events)
	}
	an := exec.Command(os.Args[0], "analyze", out, "--all", "--format", "json")
	an.Env = kubeChildEnv(t)
	ab, err := an.Output()
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	var res map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(ab, &res); err != nil {
		t.Fatalf("analyze output: %v\n%s", err, ab)
	}
	for _, n := range []string{"stage_startup_energy_j", "stage_release_energy_j"} {
		if v, ok := res[n].Value.(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want > 0", n, res[n].Value)
		}
	}
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: enginekube.LabelRole + "=engine"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("engine pods left after the run: %d", len(pods.Items))
	}
}

// An engine pod whose image is not there (imagePullPolicy Never: it is
// never pulled) fails the run's start with the kubelet's reason, and the
// pod is deleted.
func TestKubernetesEnginePodImageMissing(t *testing.T) {
	kubeconfig, _, ns, client := kubeCluster(t)
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(pod, []byte(fmt.Sprintf(simEnginePod, "docker.io/library/joulebench-missing:none")), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "benchmark-1.5", "--engine", "kubernetes", "--k8s-pod", pod,
		"--kubeconfig", kubeconfig, "--k8s-namespace", ns, "--out", filepath.Join(dir, "out")}, fastSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = kubeChildEnv(t)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "ErrImageNeverPull") || !strings.Contains(string(b), "engine pod "+ns+"/sim-engine-") {
		t.Fatalf("run: %v, want the start failed with ErrImageNeverPull:\n%s", err, b)
	}
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: enginekube.LabelRole + "=engine"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("engine pods left after the failed start: %d", len(pods.Items))
	}
}
