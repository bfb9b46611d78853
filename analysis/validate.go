package analysis

import (
	"fmt"

	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// PreparedDeps is the step dependencies of l with every request set its
// steps use loaded (steps.Deps.Prepare), so that the formal requests it
// sends are known; nil when a request set cannot be loaded (validate then
// judges steady state from the profile's counts alone).
func PreparedDeps(l *workflow.Loaded) *steps.Deps {
	d := &steps.Deps{}
	if d.Prepare(l) != nil {
		return nil
	}
	return d
}

// ValidLine is validate's line for a valid profile: the name it was found
// by, and what it declares.
func ValidLine(name string, l *workflow.Loaded) string {
	return fmt.Sprintf("%s: profile %s is valid: %d parameters, %d steps, %d derived values, %d metrics, %d checks",
		name, l.Profile.Name, len(l.Profile.Parameters), len(l.Steps), len(l.Profile.Derive), len(l.Profile.Metrics), len(l.Profile.Checks))
}
