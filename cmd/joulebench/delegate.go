package main

import (
	"os"

	"github.com/joulebench/joulebench/internal/kubehelper"
)

// delegateKubernetes hands a command that asks for Kubernetes to
// joulebench-kube in this process's place (kubehelper.Delegate), so that
// the default binary carries no Kubernetes client. It returns only when it
// does not hand over: nil when the command needs no Kubernetes or this is
// the Kubernetes build, else why it cannot (an invalid-input error).
func delegateKubernetes(args []string) error {
	if kubernetesBuiltIn {
		os.Unsetenv(kubehelper.DelegatedEnv)
		return nil
	}
	if why := kubehelper.Asked(args); why != "" {
		return withCode(exitInvalid, kubehelper.Delegate(why, args))
	}
	// The environment may set the options for every command, analyze
	// too: handed over when there is a helper, else the command goes on
	// here and refuses only where it needs Kubernetes.
	if why := kubehelper.AskedByEnv(os.Getenv); why != "" {
		if _, err := kubehelper.Find(); err == nil {
			return withCode(exitInvalid, kubehelper.Delegate(why, args))
		}
	}
	return nil
}

// kubeStatus says where this joulebench's Kubernetes commands run.
func kubeStatus() string { return kubehelper.Status(kubernetesBuiltIn) }
