//go:build kubernetes

package executors

import (
	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/campaign/kube"
)

// KubernetesBuiltIn: this is joulebench-kube, the build with client-go.
const KubernetesBuiltIn = true

// kubernetes is the Kubernetes executor of sweeps.
func kubernetes(image, kubeconfig string) campaign.Executor {
	return &kube.Executor{Image: image, Kubeconfig: kubeconfig}
}
