// Package executors lists the executors a sweep may name: the built-in
// ones (local, slurm) and Kubernetes', which only the kubernetes build
// (joulebench-kube, with client-go) holds; the default build's refuses
// with how to get it.
package executors

import "github.com/joulebench/joulebench/campaign"

// All are the executors of a sweep; image and kubeconfig configure
// Kubernetes' (--image, --kubeconfig).
func All(image, kubeconfig string) []campaign.Executor {
	return append(campaign.BuiltinExecutors(), kubernetes(image, kubeconfig))
}
