package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/metricdefs"
)

// Words of a check's invalidates list besides metric names and NAME*
// patterns.
const (
	// InvalidatesAll is the whole run.
	InvalidatesAll = record.InvalidatesAll
	// InvalidatesGPUEnergy is every metric whose boundary is gpu.
	InvalidatesGPUEnergy = "gpu_energy"
)

// invalidates checks each check's invalidates list against the profile's
// metrics and expands it into metric names (CheckDecl.Invalidated and the
// check's definition in f): a name must be a metric, a NAME* pattern must
// match one, and an exclude check (which removes the whole run) may only
// say all.
func (d *decoder) invalidates(p *Profile, f *formulas) {
	for i := range p.Checks {
		c := &p.Checks[i]
		if len(c.Invalidates) == 0 {
			continue
		}
		node := f.exprNodes[c.Name]["invalidates"]
		where := "checks." + c.Name + ".invalidates"
		out, err := expandInvalidates(c.Invalidates, p.Metrics)
		if err == nil && c.Severity == metricdefs.SeverityExclude && !slices.Equal(out, []string{InvalidatesAll}) {
			err = fmt.Errorf("an exclude check removes the whole run: invalidates may only be [all] (or left out); use severity warn for a check that invalidates some figures")
		}
		if err != nil {
			d.Errorf(node, where, "%v", err)
			continue
		}
		c.Invalidated = out
		for j := range f.defs {
			if f.defs[j].Name == c.Name && f.defs[j].Kind == metricdefs.KindCheck {
				f.defs[j].Invalidates = out
			}
		}
	}
}

// expandInvalidates turns an invalidates list into metric names in
// profile order, or [all].
func expandInvalidates(list []string, metrics []MetricDecl) ([]string, error) {
	want := map[string]bool{}
	for _, w := range list {
		switch {
		case w == InvalidatesAll:
			if len(list) > 1 {
				return nil, fmt.Errorf("all goes alone (the whole run)")
			}
			return []string{InvalidatesAll}, nil
		case w == InvalidatesGPUEnergy:
			n := 0
			for _, m := range metrics {
				if m.Boundary == "gpu" {
					want[m.Name] = true
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: the profile has no metric with boundary gpu", w)
			}
		case strings.HasSuffix(w, "*"):
			prefix, n := strings.TrimSuffix(w, "*"), 0
			for _, m := range metrics {
				if strings.HasPrefix(m.Name, prefix) {
					want[m.Name] = true
					n++
				}
			}
			if prefix == "" || strings.Contains(prefix, "*") || n == 0 {
				return nil, fmt.Errorf("%q matches no metric of the profile (a pattern is a metric name's start followed by *)", w)
			}
		default:
			if !slices.ContainsFunc(metrics, func(m MetricDecl) bool { return m.Name == w }) {
				return nil, fmt.Errorf("%q is not a metric of the profile (want metric names, NAME*, %s or %s)", w, InvalidatesGPUEnergy, InvalidatesAll)
			}
			want[w] = true
		}
	}
	var out []string
	for _, m := range metrics {
		if want[m.Name] {
			out = append(out, m.Name)
		}
	}
	return out, nil
}
