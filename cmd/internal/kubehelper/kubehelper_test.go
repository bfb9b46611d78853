package kubehelper

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAsked(t *testing.T) {
	dir := t.TempDir()
	kubeSpec := filepath.Join(dir, "kube.json")
	simSpec := filepath.Join(dir, "sim.json")
	for p, engines := range map[string]string{kubeSpec: `["kubernetes"]`, simSpec: `["sim"]`} {
		if err := os.WriteFile(p, []byte(`{"version": 1, "engines": `+engines+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "c.yaml", "--executor", "kubernetes"}, "--executor kubernetes"},
		{[]string{"sweep", "c.yaml", "--executor=kubernetes", "--dry-run"}, "--executor kubernetes"},
		{[]string{"sweep", "c.yaml", "--executor", "slurm"}, ""},
		{[]string{"run", "benchmark-1.5", "--engine", "kubernetes", "--k8s-pod", "p.yaml"}, "--engine kubernetes"},
		{[]string{"run", "benchmark-1.5", "--engine=sim, kubernetes"}, "--engine kubernetes"},
		{[]string{"run", "benchmark-1.5", "--engine", "sim", "--engine", "kubernetes"}, "--engine kubernetes"},
		{[]string{"run", "benchmark-1.5", "--k8s-namespace=bench"}, "--k8s-namespace"},
		{[]string{"run", "--spec", kubeSpec}, "--spec " + kubeSpec + " (engine kubernetes)"},
		{[]string{"run", "--spec=" + simSpec}, ""},
		{[]string{"run", "--spec", filepath.Join(dir, "absent.json")}, ""}, // the run says what is wrong with it
		{[]string{"run", "benchmark-1.5", "--engine", "sim", "--model", "kubernetes"}, ""},
		{[]string{"run", "benchmark-1.5", "--", "--executor", "kubernetes"}, ""},
		{[]string{"analyze", "out"}, ""},
	} {
		if got := Asked(tc.args); got != tc.want {
			t.Errorf("Asked(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestAskedByEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"JOULEBENCH_EXECUTOR": "kubernetes"}, "JOULEBENCH_EXECUTOR=kubernetes"},
		{map[string]string{"JOULEBENCH_EXECUTOR": "slurm"}, ""},
		{map[string]string{"JOULEBENCH_ENGINE": "sim,kubernetes"}, "JOULEBENCH_ENGINE=kubernetes"},
		{map[string]string{"JOULEBENCH_ENGINE": "vllm"}, ""},
		{map[string]string{"JOULEBENCH_K8S_POD": "pod.yaml"}, "JOULEBENCH_K8S_POD"},
		{map[string]string{"JOULEBENCH_K8S_NAMESPACE": "bench"}, "JOULEBENCH_K8S_NAMESPACE"},
		{map[string]string{"JOULEBENCH_KUBECONFIG": "k"}, ""}, // sweep's --kubeconfig too: not by itself a request
		{nil, ""},
	} {
		if got := AskedByEnv(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("AskedByEnv(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
