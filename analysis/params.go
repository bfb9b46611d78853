package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// Where a parameter value of an evaluation came from.
const (
	// ParamFromRun: the value the run was archived with (run.json
	// parameters).
	ParamFromRun = "run.json"
	// ParamFromDefault: the profile's default (run.json does not have the
	// parameter: it is new in the profile, or the run recorded none).
	ParamFromDefault = "profile default"
	// ParamFromSet: the user's --set.
	ParamFromSet = "--set"
)

// ParamOrigins says where each parameter of an evaluation came from.
type ParamOrigins struct {
	// From maps each of the evaluating profile's parameters to
	// ParamFromRun, ParamFromDefault or ParamFromSet.
	From map[string]string
	// Ignored lists the parameters of run.json that the evaluating
	// profile does not declare (sorted): they were not applied.
	Ignored []string
}

// Names returns the parameters that came from where (sorted).
func (o ParamOrigins) Names(where string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(o.From)) {
		if o.From[k] == where {
			out = append(out, k)
		}
	}
	return out
}

// String is the origins in one line: how many values came from each
// place, naming the defaults and the --set ones, then those ignored.
func (o ParamOrigins) String() string {
	parts := []string{fmt.Sprintf("%d from %s", len(o.Names(ParamFromRun)), ParamFromRun)}
	for _, where := range []string{ParamFromDefault, ParamFromSet} {
		if n := o.Names(where); len(n) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(n), where, listSome(n)))
		}
	}
	if len(o.Ignored) > 0 {
		parts = append(parts, fmt.Sprintf("%d of run.json not in the profile, ignored (%s)", len(o.Ignored), listSome(o.Ignored)))
	}
	return "parameters: " + strings.Join(parts, "; ")
}

// maxListedParams bounds the names String lists per place (an old run.json
// lacks dozens of today's parameters).
const maxListedParams = 8

func listSome(names []string) string {
	if len(names) <= maxListedParams {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListedParams], ", ") + fmt.Sprintf(", … %d more", len(names)-maxListedParams)
}

// paramOrigins finds where each of l's parameters came from, given the
// run's archived parameters, the user's sets and the archived ones left
// out.
func paramOrigins(l *workflow.Loaded, meta record.Meta, sets []string, ignored []string) ParamOrigins {
	user, _ := workflow.ParseSets(sets) // already checked by the load
	o := ParamOrigins{From: map[string]string{}, Ignored: ignored}
	for _, d := range l.Profile.Parameters {
		switch _, inRun := meta.Parameters[d.Name]; {
		case hasKey(user, d.Name):
			o.From[d.Name] = ParamFromSet
		case inRun:
			o.From[d.Name] = ParamFromRun
		default:
			o.From[d.Name] = ParamFromDefault
		}
	}
	return o
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// loadOther loads a profile other than the run's own (--profile) with the
// parameters the run was archived with, as far as the profile declares
// them, then the user's sets: a re-analysis keeps the run's settings
// (release hold, window, ...) and changes only the method. It returns the
// archived parameters the profile does not declare (sorted), which are
// not applied.
func (p Profiles) loadOther(src []byte, name string, meta record.Meta, sets []string) (*workflow.Loaded, []string, error) {
	l, err := p.Load(src, name, sets) // the profile's declarations, and the user's sets checked
	if err != nil || len(meta.Parameters) == 0 {
		return l, nil, err
	}
	declared := map[string]bool{}
	for _, d := range l.Profile.Parameters {
		declared[d.Name] = true
	}
	kept := record.Meta{Parameters: map[string]any{}}
	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(meta.Parameters)) {
		if declared[k] {
			kept.Parameters[k] = meta.Parameters[k]
		} else {
			ignored = append(ignored, k)
		}
	}
	if len(kept.Parameters) == 0 {
		return l, ignored, nil
	}
	l, err = p.loadArchived(src, name, kept, sets)
	return l, ignored, err
}
