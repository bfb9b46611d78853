package workflow

import (
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/metricdefs"
)

// StageEnergy is one row of a profile's energy-by-stage table
// (`stage_energy:`): a stage name, expressions for its interval and its GPU
// energy, and whether its energy adds to the table's total. The expressions
// are compiled with the profile's other formulas, so that a row can use
// exactly the derived values its metrics use (e_startup, release_end, ...);
// each is evaluated as a derived value named by StartName, EndName and
// EnergyName.
type StageEnergy struct {
	Stage string `yaml:"stage"`
	// Start, End and Energy are expressions: the interval's bounds (run
	// clock, s) and its GPU energy (J).
	Start  string `yaml:"start"`
	End    string `yaml:"end"`
	Energy string `yaml:"energy"`
	// Within names the row this stage lies inside (warm-up inside
	// startup); it is then not added to the total.
	Within string `yaml:"within"`
	// InTotal says whether the energy adds to the total; default true for
	// a row not Within another.
	InTotal *bool `yaml:"in_total"`
	// When and NA make the row not applicable on runs where When is false.
	When        string `yaml:"when"`
	NA          string `yaml:"na"`
	Description string `yaml:"description"`
}

// Counted reports whether the row's energy adds to the total.
func (s StageEnergy) Counted() bool {
	if s.InTotal != nil {
		return *s.InTotal
	}
	return s.Within == ""
}

// StartName, EndName and EnergyName are the derived values that hold the
// row's evaluated interval and energy in the results.
func (s StageEnergy) StartName() string  { return "stage_" + s.Stage + "_start" }
func (s StageEnergy) EndName() string    { return "stage_" + s.Stage + "_end" }
func (s StageEnergy) EnergyName() string { return "stage_" + s.Stage + "_energy_j" }

var stageNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// stageEnergy decodes the `stage_energy:` list into p.StageEnergy and
// returns its formulas as derived definitions, recording each expression's
// node so that a compile error points into the YAML.
func (d *decoder) stageEnergy(p *Profile, n *yaml.Node, exprNodes map[string]map[string]*yaml.Node, nameNodes map[string]*yaml.Node) []metricdefs.Def {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, "stage_energy", "expected a list of {stage, start, end, energy}, got a %s", yamlstrict.KindName(n))
		return nil
	}
	var defs []metricdefs.Def
	var rows []*yaml.Node // the node of each row in p.StageEnergy
	seen := map[string]bool{}
	for i, item := range n.Content {
		where := fmt.Sprintf("stage_energy[%d]", i)
		var s StageEnergy
		present := d.Strict(item, &s, where)
		if !stageNameRE.MatchString(s.Stage) {
			d.Errorf(orRoot(present["stage"], item), where, "stage: required, lower-case letters, digits and _ (got %q)", s.Stage)
			continue
		}
		where = fmt.Sprintf("stage_energy[%d] (%s)", i, s.Stage)
		if seen[s.Stage] {
			d.Errorf(present["stage"], where, "stage %q is listed twice", s.Stage)
			continue
		}
		seen[s.Stage] = true
		if s.Start == "" || s.End == "" || s.Energy == "" {
			d.Errorf(item, where, "a row needs start, end and energy expressions")
			continue
		}
		p.StageEnergy = append(p.StageEnergy, s)
		rows = append(rows, item)
		for _, f := range []struct{ name, src, key, unit, what string }{
			{s.StartName(), s.Start, "start", "s", "start"},
			{s.EndName(), s.End, "end", "s", "end"},
			{s.EnergyName(), s.Energy, "energy", "J", "GPU energy"},
		} {
			defs = append(defs, metricdefs.Def{Name: f.name, Kind: metricdefs.KindDerived, Expr: f.src, When: s.When, NA: s.NA,
				Unit: f.unit, Description: fmt.Sprintf("energy by stage: %s of stage %s", f.what, s.Stage)})
			exprNodes[f.name] = map[string]*yaml.Node{metricdefs.FieldExpr: present[f.key], metricdefs.FieldWhen: present["when"]}
			nameNodes[f.name] = orRoot(present["stage"], item)
		}
	}
	for i, s := range p.StageEnergy {
		if s.Within != "" && (!seen[s.Within] || s.Within == s.Stage) {
			d.Errorf(rows[i], fmt.Sprintf("stage_energy (%s)", s.Stage), "within: %q is not another stage of this table", s.Within)
		}
	}
	return defs
}
