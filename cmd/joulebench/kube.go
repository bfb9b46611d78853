//go:build kubernetes

package main

import (
	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/campaign/kube"
)

// kubernetesBuiltIn: this is joulebench-kube, the build with client-go.
const kubernetesBuiltIn = true

// kubeExecutor is the Kubernetes executor of sweeps.
func kubeExecutor(image, kubeconfig string) campaign.Executor {
	return &kube.Executor{Image: image, Kubeconfig: kubeconfig}
}
