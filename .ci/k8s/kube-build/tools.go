//go:build tools

// Package tools pins the Kubernetes commands .ci/k8s/build.sh builds: the
// control plane, the kubelet and kubectl of one release, from the Go module
// proxy (k8s.io/kubernetes with its staging modules replaced by their
// published versions in go.mod).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
