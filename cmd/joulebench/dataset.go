package main

import (
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// steadyFeasible says before anything starts when a profile can never
// reach steady state (runner.SteadyFeasible), warning on stderr.
func (a *app) steadyFeasible(l *workflow.Loaded, d *steps.Deps) error {
	return runner.SteadyFeasible(l, d, a.errOut)
}
