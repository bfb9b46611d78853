package workflow

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LaterStepRequirer is implemented by step configurations that need a
// step of another kind after them in the same profile: a step that starts
// an engine needs one that stops it, so that no run leaves it running. The
// kinds are named by the step package; workflow only checks the order.
type LaterStepRequirer interface {
	// RequiresLater returns the kinds of which one must follow the step,
	// and why (for the error message).
	RequiresLater() (kinds []string, why string)
}

// stepCombos reports each step whose configuration requires a later step
// of some kind that the profile does not have, at the step's kind.
func (d *decoder) stepCombos(steps []Step, kindNodes []*yaml.Node) {
	for i, st := range steps {
		rq, ok := st.Config.(LaterStepRequirer)
		if !ok {
			continue
		}
		kinds, why := rq.RequiresLater()
		found := false
		for _, later := range steps[i+1:] {
			for _, k := range kinds {
				found = found || later.Kind == k
			}
		}
		if !found {
			d.Errorf(kindNodes[i], fmt.Sprintf("steps[%d] (%s)", st.Index-1, st.Kind), "a %s step needs a later %s step: %s", st.Kind, strings.Join(kinds, " or "), why)
		}
	}
}
