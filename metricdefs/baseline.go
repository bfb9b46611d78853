package metricdefs

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/joulebench/joulebench/archive/record"
)

// BaselineName is the name of the baseline results in expressions:
// `baseline.steady_state_j_per_token` is that metric of the same profile
// evaluated on a baseline run (joulebench run|analyze --baseline DIR).
const BaselineName = "baseline"

// Baseline is the same profile's results on a baseline run.
type Baseline struct {
	RunID string
	// Values are the numeric results by name.
	Values map[string]float64
	// Missing says why a result is not a number on the baseline run
	// (not applicable, failed, not numeric).
	Missing map[string]string
}

// NewBaseline takes the numeric results of a baseline run's evaluation.
func NewBaseline(res *record.Results) *Baseline {
	b := &Baseline{RunID: res.RunID, Values: map[string]float64{}, Missing: map[string]string{}}
	for name, r := range res.Values {
		if f, ok := toFloat(r.Value); ok {
			b.Values[name] = f
			continue
		}
		why := r.Note
		if why == "" {
			why = fmt.Sprintf("not a number (%T)", r.Value)
		}
		b.Missing[name] = why
	}
	return b
}

// baselineRefs returns the names a formula reads as `baseline.NAME` (or
// `baseline["NAME"]`), and whether it uses `baseline` at all.
func baselineRefs(tree *ast.Node) (names []string, uses bool) {
	v := &baselineVisitor{}
	ast.Walk(tree, v)
	return v.names, v.uses
}

type baselineVisitor struct {
	names []string
	uses  bool
}

func (v *baselineVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == BaselineName {
			v.uses = true
		}
	case *ast.MemberNode:
		if id, ok := n.Node.(*ast.IdentifierNode); ok && id.Value == BaselineName {
			if s, ok := n.Property.(*ast.StringNode); ok {
				v.names = append(v.names, s.Value)
			}
		}
	}
}

// checkBaselineRefs reports a `baseline.NAME` that names no derived value
// or metric of the profile (a typo would otherwise read as not applicable
// on every run).
func checkBaselineRefs(list []*compiled, defs map[string]*compiled) []*CompileError {
	var errs []*CompileError
	for _, c := range list {
		for _, n := range c.baselineNames {
			if d, ok := defs[n]; ok && d.Kind != KindCheck {
				continue
			}
			var known []string
			for _, d := range list {
				if d.Kind == KindMetric {
					known = append(known, d.Name)
				}
			}
			sort.Strings(known)
			errs = append(errs, &CompileError{Def: c.Name, Field: FieldExpr,
				Msg: fmt.Sprintf("baseline.%s: no metric or derived value %q in this profile (metrics: %s)", n, n, strings.Join(known, ", "))})
		}
	}
	return errs
}

// baselineNA says why a formula that reads the baseline is not applicable
// on this evaluation: no baseline given, or a value it reads is not a
// number on the baseline run. "" when it can be evaluated.
func baselineNA(c *compiled, b *Baseline) string {
	if !c.usesBaseline {
		return ""
	}
	if b == nil {
		return "not applicable: no baseline (--baseline DIR)"
	}
	for _, n := range c.baselineNames {
		if _, ok := b.Values[n]; ok {
			continue
		}
		why := b.Missing[n]
		if why == "" {
			why = "absent"
		}
		return fmt.Sprintf("not applicable: baseline %s: %s", n, why)
	}
	return ""
}

// hasDef reports whether a profile defines a derived value, metric or
// check of that name (an older profile's own `baseline`); then `baseline`
// is that, not the baseline results.
func hasDef(spec Spec, name string) bool {
	for _, d := range spec.Defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// exprParams are the parameters expressions see: all of them, except that
// with the baseline results in the environment a parameter named
// `baseline` (the idle-baseline duration of older profiles) is for steps
// only (${baseline}, --set baseline=...).
func exprParams(params []Param, withBaseline bool) []Param {
	if !withBaseline {
		return params
	}
	out := make([]Param, 0, len(params))
	for _, p := range params {
		if p.Name != BaselineName {
			out = append(out, p)
		}
	}
	return out
}

// baselineField is `baseline` in the environment.
var baselineField = reflect.StructField{Name: "Baseline", Type: reflect.TypeOf(map[string]float64{}), Tag: `expr:"baseline"`}

func (p *Program) setBaseline(env reflect.Value, b *Baseline) {
	vals := map[string]float64{}
	if b != nil {
		vals = b.Values
	}
	env.Field(p.fields[BaselineName]).Set(reflect.ValueOf(vals))
}
