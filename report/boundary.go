package report

import (
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// MeasuredDomains returns the power domains of the run's devices
// (run.json hardware.devices): the boundaries it measured.
func MeasuredDomains(m record.Meta) map[string]bool {
	out := map[string]bool{}
	for _, d := range m.Hardware.Devices {
		out[d.DomainOrGPU()] = true
	}
	return out
}

// Unmeasured reports whether r is a figure of a boundary the run did not
// measure at all (no device of any of its domains) while it measured
// another one: a GPU figure of a node-only recording, a node figure of a
// GPU-only run. Such a value is not applicable by construction, and the
// default views (the summary, report's tables) leave it out; --all and
// the programs' formats keep it. A run that measured no power keeps every
// row (each says why it has no value).
func Unmeasured(r record.Result, measured map[string]bool) bool {
	if r.Value != nil || r.Boundary == "" || len(measured) == 0 {
		return false
	}
	for _, d := range strings.Split(r.Boundary, "+") {
		if measured[d] {
			return false
		}
	}
	return true
}
