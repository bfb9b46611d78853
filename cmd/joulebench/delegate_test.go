package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/cmd/internal/kubehelper"
	"github.com/joulebench/joulebench/engines/kubeflags"
)

// The default binary hands a Kubernetes command to joulebench-kube in its
// own place: the same arguments and environment, the helper's exit status;
// without a helper it says how to build one; a helper that is not the
// Kubernetes build refuses instead of handing the command on again.
func TestDelegatesToKubeHelper(t *testing.T) {
	if kubernetesBuiltIn {
		t.Skip("this test binary is the Kubernetes build: it hands nothing over")
	}
	dir := t.TempDir()
	helper := filepath.Join(dir, "stand-in")
	script := "#!/bin/sh\necho \"pid $$\"\nfor a in \"$@\"; do echo \"arg [$a]\"; done\necho \"delegated [$" + kubehelper.DelegatedEnv + "] secret [$JB_TEST_SECRET]\"\nexit 7\n"
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"sweep", "my campaign.yaml", "--executor", "kubernetes", "--image", "example.com/jb:1"}
	childArgs := func(args []string, env ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), append([]string{"JOULEBENCH_TEST_AS_MAIN=1", "PATH=" + dir, "JB_TEST_SECRET=s3"}, env...)...)
		b, err := cmd.CombinedOutput()
		if err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		if got := "pid " + strconv.Itoa(cmd.Process.Pid) + "\n"; strings.Contains(string(b), "pid ") && !strings.HasPrefix(string(b), got) {
			t.Errorf("the helper ran as another process (want it in joulebench's place, %q):\n%s", got, b)
		}
		return string(b), cmd.ProcessState.ExitCode()
	}
	child := func(env ...string) (string, int) { t.Helper(); return childArgs(args, env...) }

	out, code := child(kubeflags.HelperEnv + "=" + helper)
	want := "arg [sweep]\narg [my campaign.yaml]\narg [--executor]\narg [kubernetes]\narg [--image]\narg [example.com/jb:1]\ndelegated [1] secret [s3]\n"
	if code != 7 || !strings.HasSuffix(out, want) {
		t.Errorf("handed over: exit %d, output\n%s\nwant exit 7 and\n%s", code, out, want)
	}

	// In PATH under its own name.
	if err := os.Rename(helper, filepath.Join(dir, kubeflags.HelperName)); err != nil {
		t.Fatal(err)
	}
	if out, code := child(kubeflags.HelperEnv + "="); code != 7 || !strings.HasSuffix(out, want) {
		t.Errorf("helper in PATH: exit %d, output\n%s", code, out)
	}

	// Asked for by the environment (which sets the options of every
	// command): handed over too.
	if out, code := childArgs([]string{"version"}, kubeflags.HelperEnv+"="+filepath.Join(dir, kubeflags.HelperName), "JOULEBENCH_ENGINE=kubernetes"); code != 7 || !strings.Contains(out, "arg [version]\n") {
		t.Errorf("JOULEBENCH_ENGINE=kubernetes: exit %d, output\n%s", code, out)
	}

	// None to hand it to.
	if err := os.Remove(filepath.Join(dir, kubeflags.HelperName)); err != nil {
		t.Fatal(err)
	}
	out, code = child(kubeflags.HelperEnv + "=")
	if code != exitInvalid || !strings.Contains(out, "--executor kubernetes: this joulebench is built without the Kubernetes client") ||
		!strings.Contains(out, "go build -tags kubernetes -o joulebench-kube ./cmd/joulebench") {
		t.Errorf("no helper: exit %d, output\n%s", code, out)
	}

	// Asked for by the environment with no helper: the command goes on
	// here (version needs no Kubernetes).
	if out, code := childArgs([]string{"version"}, kubeflags.HelperEnv+"=", "JOULEBENCH_ENGINE=kubernetes"); code != 0 || !strings.Contains(out, "kubernetes: no joulebench-kube") {
		t.Errorf("JOULEBENCH_ENGINE=kubernetes without a helper: exit %d, output\n%s", code, out)
	}

	// Handed to a joulebench without the client (JOULEBENCH_KUBE naming
	// the default build): refused, not handed on forever.
	out, code = child(kubeflags.HelperEnv+"="+os.Args[0], kubehelper.DelegatedEnv+"=1")
	if code != exitInvalid || !strings.Contains(out, "handed to a joulebench that is not the Kubernetes build") {
		t.Errorf("loop: exit %d, output\n%s", code, out)
	}
}

// The default binary links no Kubernetes client; the kubernetes build does.
// (client-go doubles the binary and adds ~35 MB to every command's RSS:
// docs/performance.md.)
func TestDefaultBinaryHasNoKubernetesClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, tc := range []struct {
		tags []string
		want bool
	}{{nil, false}, {[]string{"-tags", "kubernetes"}, true}} {
		b, err := exec.Command("go", append(append([]string{"list", "-deps"}, tc.tags...), ".")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", tc.tags, err, b)
		}
		deps := "\n" + string(b)
		if got := strings.Contains(deps, "\nk8s.io/client-go/"); got != tc.want {
			t.Errorf("tags %v: links client-go %v, want %v", tc.tags, got, tc.want)
		}
		// No k8s.io package at all in the default build (apimachinery's
		// name rules came in through campaign's kubernetes section).
		if got := strings.Contains(deps, "\nk8s.io/") || strings.Contains(deps, "\nsigs.k8s.io/"); got != tc.want {
			t.Errorf("tags %v: links a k8s.io package %v, want %v", tc.tags, got, tc.want)
		}
		if got := strings.Contains(deps, "\ngithub.com/joulebench/joulebench/engines/kube\n"); got != tc.want {
			t.Errorf("tags %v: links engines/kube %v, want %v", tc.tags, got, tc.want)
		}
	}
}

// A sweep that reaches the kubernetes executor in the default build (its
// --executor from a configuration file, which main does not read before
// handing over; here the command runs in this process, past main) is
// refused, exit 2, with how to get joulebench-kube.
func TestNoKubeExecutorSaysHow(t *testing.T) {
	if kubernetesBuiltIn {
		t.Skip("this test binary is the Kubernetes build")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(smallCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, errOut, code := runCLI(t, "sweep", "campaign.yaml", "--executor", "kubernetes", "--dry-run")
	if code != exitInvalid || !strings.Contains(errOut, "--executor kubernetes: this joulebench is built without the Kubernetes client") ||
		!strings.Contains(errOut, "go build -tags kubernetes -o joulebench-kube ./cmd/joulebench") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}
