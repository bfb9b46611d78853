//go:build !kubernetes

package main

import (
	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/engines/kubeflags"
)

// kubernetesBuiltIn: the default build, without client-go; main hands a
// command that asks for Kubernetes to joulebench-kube (kubehelper).
const kubernetesBuiltIn = false

// kubeExecutor is the kubernetes executor in a build without the client:
// a sweep that reaches it (its --executor from a configuration file, read
// after main chose) is refused with how to get joulebench-kube.
func kubeExecutor(string, string) campaign.Executor {
	return campaign.Unavailable(kubeflags.Kind, kubeflags.ErrNotBuiltIn)
}
