//go:build !kubernetes

package executors

import (
	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/engines/kubeflags"
)

// KubernetesBuiltIn: the default build, without client-go; joulebench
// hands a command that asks for Kubernetes to joulebench-kube
// (internal/kubehelper).
const KubernetesBuiltIn = false

// kubernetes is the kubernetes executor in a build without the client: a
// sweep that reaches it (its --executor from a configuration file, read
// after main chose) is refused with how to get joulebench-kube.
func kubernetes(string, string) campaign.Executor {
	return campaign.Unavailable(kubeflags.Kind, kubeflags.ErrNotBuiltIn)
}
