// Package steps holds one file per step kind of a profile's procedure
// (preflight, monitor, baseline, start_engine, verify_engine, warmup,
// requests, release, archive). Each kind has a configuration struct decoded
// strictly from the profile's `with:`; Registry lists them by name.
package steps

import (
	"github.com/joulebench/joulebench/workflow"
)

// Registry returns a registry of every step kind. Each call builds a new
// one: there is no global state.
func Registry() *workflow.Registry {
	r := workflow.NewRegistry()
	for _, k := range []workflow.StepKind{
		preflightKind, monitorKind, baselineKind, startEngineKind, verifyEngineKind,
		warmupKind, requestsKind, releaseKind, archiveKind,
	} {
		if err := r.Register(k); err != nil {
			panic(err) // a programming error: two kinds share a name
		}
	}
	return r
}
