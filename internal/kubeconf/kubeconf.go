// Package kubeconf finds a Kubernetes cluster's client configuration the
// way kubectl does, for the two places that talk to a cluster: the
// Kubernetes executor of campaigns and the engine a run deploys as a pod.
package kubeconf

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// REST is the cluster's configuration: the kubeconfig file given, else
// KUBECONFIG, else the in-cluster configuration (joulebench running in a
// pod), else ~/.kube/config. flag names the option that gives the file,
// for the error.
func REST(kubeconfig, flag string) (*rest.Config, error) {
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes configuration (--%s, KUBECONFIG, in-cluster or ~/.kube/config): %w", flag, err)
	}
	return cfg, nil
}
