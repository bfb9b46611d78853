package record

import (
	"fmt"
	"maps"
)

// MaxListItems is the longest list results.json stores as a value: a
// longer one is written as null with the note "list of N items (not
// stored)". Results in memory may hold longer lists of numbers (compare
// reads a long run's every steady window from them).
const MaxListItems = 64

// Stored is res as results.json stores it: every value that is a list of
// more than MaxListItems items null, its note saying how many. res is
// not changed. The archive's writer writes it, and what shows a run's
// results (analyze, the run report) shows it.
func (res Results) Stored() Results {
	var vals map[string]Result
	for name, r := range res.Values {
		l, ok := r.Value.([]any)
		if !ok || len(l) <= MaxListItems {
			continue
		}
		if vals == nil {
			vals = maps.Clone(res.Values)
		}
		r.Value, r.Note = nil, fmt.Sprintf("list of %d items (not stored)", len(l))
		vals[name] = r
	}
	if vals != nil {
		res.Values = vals
	}
	return res
}
