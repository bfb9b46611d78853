package executors

import (
	"errors"
	"testing"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/engines/kubeflags"
)

// A sweep may name local, slurm and kubernetes; the default build's
// kubernetes executor refuses with how to get joulebench-kube.
func TestAll(t *testing.T) {
	var names []string
	for _, e := range All("img", "") {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[0] != "local" || names[1] != "slurm" || names[2] != kubeflags.Kind {
		t.Errorf("executors %v", names)
	}
	if KubernetesBuiltIn {
		return
	}
	_, err := All("img", "")[2].Describe(nil, campaign.Run{}, "", "")
	if !errors.Is(err, kubeflags.ErrNotBuiltIn) {
		t.Errorf("kubernetes in the default build: %v", err)
	}
}
