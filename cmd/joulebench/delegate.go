package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/joulebench/joulebench/engines/kubeflags"
)

// delegatedEnv marks a process that joulebench handed a Kubernetes
// command to: a helper that is not the Kubernetes build refuses instead
// of handing it on again.
const delegatedEnv = "JOULEBENCH_KUBE_DELEGATED"

// kubernetesAsked names the argument of args that asks for Kubernetes:
// --executor kubernetes, --engine kubernetes, a --k8s-* flag, or a --spec
// file whose engines include kubernetes; "" if none does.
func kubernetesAsked(args []string) string {
	for i := 0; i < len(args); i++ {
		name, val, inline := strings.Cut(args[i], "=")
		if name == "--" {
			break
		}
		if !strings.HasPrefix(name, "--") {
			continue
		}
		if !inline && i+1 < len(args) {
			val = args[i+1]
		}
		switch {
		case name == "--executor" && val == kubeflags.Kind:
			return "--executor kubernetes"
		case name == "--engine" && slices.Contains(splitList(val), kubeflags.Kind):
			return "--engine kubernetes"
		case strings.HasPrefix(name, "--k8s-"):
			return name
		case name == "--spec" && val != "" && specAsksKubernetes(val):
			return "--spec " + val + " (engine kubernetes)"
		}
	}
	return ""
}

// splitList is a list flag's value split at its commas.
func splitList(v string) []string {
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// specAsksKubernetes reads a spec file's engines; a file that cannot be
// read is left to the run to report.
func specAsksKubernetes(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var s struct {
		Engines []string `json:"engines"`
	}
	return json.Unmarshal(b, &s) == nil && slices.Contains(s.Engines, kubeflags.Kind)
}

// kubeHelper finds joulebench-kube: JOULEBENCH_KUBE, else beside this
// executable, else in PATH.
func kubeHelper() (string, error) {
	if p := os.Getenv(kubeflags.HelperEnv); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), kubeflags.HelperName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return exec.LookPath(kubeflags.HelperName)
}

// delegateKubernetes hands a command that asks for Kubernetes to
// joulebench-kube in this process's place (same arguments, environment,
// PID and signals), so that the default binary carries no Kubernetes
// client. It returns only when it does not hand over: nil when the
// command needs no Kubernetes or this is the Kubernetes build, else why
// it cannot.
func delegateKubernetes(args []string) error {
	if kubernetesBuiltIn {
		os.Unsetenv(delegatedEnv)
		return nil
	}
	why := kubernetesAsked(args)
	if why == "" {
		return nil
	}
	if os.Getenv(delegatedEnv) != "" {
		return withCode(exitInvalid, fmt.Errorf("%s: handed to a joulebench that is not the Kubernetes build: %w", why, kubeflags.ErrNotBuiltIn))
	}
	helper, err := kubeHelper()
	if err != nil {
		return withCode(exitInvalid, fmt.Errorf("%s: %w", why, kubeflags.ErrNotBuiltIn))
	}
	err = syscall.Exec(helper, append([]string{helper}, args...), append(os.Environ(), delegatedEnv+"=1"))
	return withCode(exitInvalid, fmt.Errorf("%s: starting %s (%s): %w", why, kubeflags.HelperName, helper, err))
}

// kubeStatus says where this joulebench's Kubernetes commands run, for
// `joulebench version`.
func kubeStatus() string {
	if kubernetesBuiltIn {
		return "client built in (the kubernetes build, " + kubeflags.HelperName + ")"
	}
	if p, err := kubeHelper(); err == nil {
		return "handed to " + p
	}
	return "no " + kubeflags.HelperName + " beside joulebench, in PATH or in " + kubeflags.HelperEnv + " (go build -tags kubernetes -o " + kubeflags.HelperName + " ./cmd/joulebench)"
}
