package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/engines/kubeflags"
)

// testPackageDir is this package's directory, where `go test` starts the
// test binary (tests that t.Chdir elsewhere build from it).
var testPackageDir, _ = os.Getwd()

// kubeBuild is joulebench-kube as the tests build it, once per test
// binary; TestMain removes its directory.
var kubeBuild struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// kubeHelperEnv is the environment entry that lets a child joulebench (the
// test binary as main, the default build) hand its Kubernetes commands to
// joulebench-kube, as the default binary does for users: JOULEBENCH_KUBE if
// set, else this package built with the kubernetes tag (with the race
// detector when the tests have it, so the Kubernetes code runs under it).
// The test binary built with the tag needs no helper.
func kubeHelperEnv(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(kubeflags.HelperEnv); p != "" || kubernetesBuiltIn {
		return kubeflags.HelperEnv + "=" + p
	}
	kubeBuild.once.Do(func() {
		kubeBuild.dir, kubeBuild.err = os.MkdirTemp("", "jb-kube-")
		if kubeBuild.err != nil {
			return
		}
		kubeBuild.path = filepath.Join(kubeBuild.dir, kubeflags.HelperName)
		args := []string{"build", "-tags", "kubernetes", "-o", kubeBuild.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, ".")...)
		build.Dir = testPackageDir
		kubeBuild.out, kubeBuild.err = build.CombinedOutput()
	})
	if kubeBuild.err != nil {
		t.Fatalf("building %s: %v\n%s", kubeflags.HelperName, kubeBuild.err, kubeBuild.out)
	}
	return kubeflags.HelperEnv + "=" + kubeBuild.path
}

// removeKubeBuild removes what kubeHelperEnv built.
func removeKubeBuild() {
	if kubeBuild.dir != "" {
		os.RemoveAll(kubeBuild.dir)
	}
}

// kubeChildEnv is the environment of a child joulebench that may ask for
// Kubernetes.
func kubeChildEnv(t testing.TB) []string {
	t.Helper()
	return append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1", kubeHelperEnv(t))
}
