// Package steps holds one file per step kind of a profile's procedure
// (preflight, monitor, baseline, start_engine, verify_engine, warmup,
// requests, release, archive). Each kind has a configuration struct decoded
// strictly from the profile's `with:`; the kind's descriptor (name, doc,
// config defaults and run function) is one value, and Registry lists them.
package steps

import (
	"github.com/joulebench/joulebench/workflow"
)

// Registry returns a registry of every step kind over *Deps. Each call
// builds a new one: there is no global state.
func Registry() *workflow.Registry[*Deps] {
	r, err := workflow.NewRegistry(
		preflightKind, monitorKind, baselineKind, startEngineKind, verifyEngineKind,
		warmupKind, requestsKind, observeKind, releaseKind, archiveKind,
	)
	if err != nil {
		panic(err) // a programming error: two kinds share a name
	}
	return r
}
