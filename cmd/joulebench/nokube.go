//go:build !kubernetes

package main

import (
	"context"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/engines/kubeflags"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// kubernetesBuiltIn: the default build, without client-go; main hands a
// command that asks for Kubernetes to joulebench-kube (delegate.go).
const kubernetesBuiltIn = false

// kubeExecutor is the kubernetes executor's name in a build without the
// client: a sweep that reaches it (its --executor from a config file, or
// no joulebench-kube to hand it to) is refused with how to get one.
func kubeExecutor(string, string) campaign.Executor { return noKube{} }

type noKube struct{}

func (noKube) Name() string { return "kubernetes" }

func (noKube) Run(context.Context, *campaign.Campaign, campaign.Plan, campaign.Options) (campaign.Result, error) {
	return campaign.Result{}, exitcode.Invalidf("--executor kubernetes: %w", kubeflags.ErrNotBuiltIn)
}

func (noKube) Describe(*campaign.Campaign, campaign.Run, string, string) (string, error) {
	return "", exitcode.Invalidf("--executor kubernetes: %w", kubeflags.ErrNotBuiltIn)
}
