package kube

import (
	"os"
	"strings"
	"testing"
)

const goodPod = `apiVersion: v1
kind: Pod
metadata:
  name: sim-engine
  labels:
    team: energy
spec:
  containers:
  - name: engine
    image: docker.io/library/joulebench:local
    imagePullPolicy: Never
    command: ["joulebench", "serve-sim", "--listen", ":8000", "--quick"]
    ports:
    - containerPort: 8000
    readinessProbe:
      httpGet: {path: /health, port: 8000}
      periodSeconds: 1
`

func TestParseTemplate(t *testing.T) {
	tp, err := ParseTemplate("pod.yaml", []byte(goodPod))
	if err != nil {
		t.Fatal(err)
	}
	if tp.Port != 8000 || tp.HealthPath != "/health" || !tp.ServeSim || tp.Container != "engine" {
		t.Fatalf("template %+v: want port 8000, /health, serve-sim, container engine", tp)
	}
	vllm := strings.Replace(goodPod, `command: ["joulebench", "serve-sim", "--listen", ":8000", "--quick"]`, `args: ["--model", "m", "--port", "8000"]`, 1)
	tp, err = ParseTemplate("pod.yaml", []byte(vllm))
	if err != nil || tp.ServeSim {
		t.Fatalf("a vLLM pod: %+v, %v; want not serve-sim", tp, err)
	}
	shell := strings.Replace(goodPod, `command: ["joulebench", "serve-sim", "--listen", ":8000", "--quick"]`, `command: ["sh", "-c", "exec joulebench serve-sim --listen :8000"]`, 1)
	if tp, err = ParseTemplate("pod.yaml", []byte(shell)); err != nil || !tp.ServeSim {
		t.Fatalf("serve-sim through a shell: %+v, %v; want serve-sim", tp, err)
	}
}

// TestParseTemplateErrors: each error names the file, the line (counted
// in goodPod: line 1 is apiVersion) and the rule.
func TestParseTemplateErrors(t *testing.T) {
	edit := func(old, repl string) string {
		if !strings.Contains(goodPod, old) {
			t.Fatalf("goodPod lacks %q", old)
		}
		return strings.Replace(goodPod, old, repl, 1)
	}
	cases := []struct{ name, text, want string }{
		// imagePullPolicy is line 11.
		{"unknown field", edit("imagePullPolicy:", "imagePullPolicyy:"), `pod.yaml:11: unknown field "imagePullPolicyy"`},
		// containerPort is line 14.
		{"wrong type", edit("containerPort: 8000", "containerPort: eight"), "pod.yaml:14: spec.containers.ports.containerPort: string where int32 is wanted"},
		{"kind", edit("kind: Pod", "kind: Deployment"), `pod.yaml:2: kind "Deployment": want Pod`},
		{"api version", edit("apiVersion: v1", "apiVersion: apps/v1"), `pod.yaml:1: apiVersion "apps/v1": want v1`},
		// spec.containers is line 8.
		{"no image", edit("    image: docker.io/library/joulebench:local\n", ""), "pod.yaml:8: spec.containers: the engine's container (the first) has no image"},
		{"no port", edit("    ports:\n    - containerPort: 8000\n", ""), "pod.yaml:8: spec.containers: the engine's container (the first) has no containerPort"},
		{"no container", "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n", "pod.yaml:4: spec.containers: no container"},
		{"syntax", "spec: [\n", "pod.yaml: yaml: line"},
		// The second kind is line 3.
		{"duplicate key", "apiVersion: v1\nkind: Pod\nkind: Pod\n", `pod.yaml:3: duplicate key "kind"`},
		{"empty", "", "pod.yaml: empty: want a Pod manifest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTemplate("pod.yaml", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestReadTemplateMissing(t *testing.T) {
	if _, err := ReadTemplate(t.TempDir() + "/none.yaml"); err == nil || !strings.Contains(err.Error(), "--k8s-pod") {
		t.Fatalf("err = %v, want it to name --k8s-pod", err)
	}
}

func writeFile(p, text string) error { return os.WriteFile(p, []byte(text), 0o600) }
