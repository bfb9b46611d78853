// Package workflow owns the profile: its schema, strict loading with
// positioned errors, parameter resolution, and (with the executor) running
// its steps in order.
package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/metricdefs"

	"github.com/joulebench/joulebench/internal/num"
)

// Parameter types.
const (
	TypeInt      = "int"
	TypeFloat    = "float"
	TypeBool     = "bool"
	TypeString   = "string"
	TypeDuration = "duration"
)

// ParamDecl is one declared parameter.
type ParamDecl struct {
	Name        string
	Type        string
	Default     any // int, float64, bool, string or time.Duration
	Description string
	// Min and Max bound a number (a duration in seconds) when set: the
	// default and every --set value must lie in [Min, Max].
	Min, Max *float64
	node     *yaml.Node
}

// paramLong is the long form of a parameter declaration.
type paramLong struct {
	Type        string    `yaml:"type"`
	Default     yaml.Node `yaml:"default"`
	Description string    `yaml:"description"`
	Min         *float64  `yaml:"min"`
	Max         *float64  `yaml:"max"`
}

// StepDecl is one step of the procedure.
type StepDecl struct {
	Kind string    `yaml:"kind"`
	Name string    `yaml:"name"`
	When string    `yaml:"when"`
	With yaml.Node `yaml:"with"`
}

// MetricDecl is one metric.
type MetricDecl struct {
	Name        string `yaml:"name"`
	Unit        string `yaml:"unit"`
	Expr        string `yaml:"expr"`
	Description string `yaml:"description"`
	Format      string `yaml:"format"`
	When        string `yaml:"when"`
	NA          string `yaml:"na"`
	// Summary marks a headline figure of the method: the default output
	// of run and analyze shows these (--all shows every value).
	Summary SummaryMode `yaml:"summary"`
	// Boundary is the power domains an energy metric covers (gpu,
	// cpu+dram, node): the headings name it.
	Boundary string `yaml:"boundary"`
	// Label is the metric's name for people (tables, the summary, cards,
	// plots); the name stays its identifier (formulas, --set, JSON).
	Label string `yaml:"label"`
	// Detail is an optional expression whose value becomes the note of a
	// metric that has a value (its inputs, e.g. the grid intensity and
	// PUE of a carbon figure), shown beside it wherever it is shown.
	Detail string `yaml:"detail"`
}

// CheckDecl is one flag/check.
type CheckDecl struct {
	Name        string `yaml:"name"`
	Expr        string `yaml:"expr"`
	Severity    string `yaml:"severity"`
	Message     string `yaml:"message"`
	Detail      string `yaml:"detail"`
	Description string `yaml:"description"`
	When        string `yaml:"when"`
	NA          string `yaml:"na"`
	// Expected says, in one line, where a failed warn check is expected
	// (e.g. a shared or small machine); the summary prints it instead of
	// FAIL.
	Expected string `yaml:"expected"`
	// Invalidates names the figures a failure of the check invalidates:
	// metric names, NAME* for every metric whose name starts with NAME,
	// gpu_energy for every metric whose boundary is gpu, or all (the whole
	// run). Compare, estimate and the run summary read it; an exclude
	// check invalidates the whole run (all, the default). Load expands it
	// into metric names (Invalidated).
	Invalidates []string `yaml:"invalidates"`
	// Invalidated is Invalidates expanded: metric names in profile order,
	// or [all].
	Invalidated []string `yaml:"-"`
}

// DeriveDecl is one derived value: `name: expression` or
// `name: {expr, when, na, unit, description}`.
type DeriveDecl struct {
	Name        string `yaml:"-"`
	Expr        string `yaml:"expr"`
	When        string `yaml:"when"`
	NA          string `yaml:"na"`
	Unit        string `yaml:"unit"`
	Description string `yaml:"description"`
}

// Profile is a decoded profile file.
type Profile struct {
	Name        string
	Version     int
	Description string
	Spec        string
	Parameters  []ParamDecl
	Steps       []StepDecl
	Derive      []DeriveDecl
	Metrics     []MetricDecl
	Checks      []CheckDecl
	// Quick is the profile's quick parameter set: overrides (as --set
	// values) that the simulator's default run applies so that it finishes
	// in about a minute. Every key is a declared parameter.
	Quick map[string]string
	// StageEnergy is the energy-by-stage table (stage_energy.go).
	StageEnergy []StageEnergy
}

// Step is a step ready to run: its kind, its decoded configuration and its
// optional condition.
type Step struct {
	Index  int // 1-based position in the profile
	Kind   string
	Name   string
	Config any
	When   *metricdefs.Condition
}

// Label is how errors and progress name the step: `step 3 (warmup)`.
func (s Step) Label() string {
	if s.Name != "" && s.Name != s.Kind {
		return fmt.Sprintf("step %d (%s %q)", s.Index, s.Kind, s.Name)
	}
	return fmt.Sprintf("step %d (%s)", s.Index, s.Kind)
}

// Loaded is a profile after parse and compile: nothing left to check
// before running.
type Loaded struct {
	Profile *Profile
	Ref     record.ProfileRef
	Source  []byte
	// Params holds the resolved value of every parameter (defaults with
	// --set overrides applied), as expressions see them: durations in
	// seconds.
	Params  map[string]any
	Steps   []Step
	Program *metricdefs.Program
	flat    *flattening // the extends chain, when there is one (extends.go)
}

// Options control loading.
type Options struct {
	// Registry of step kinds (a *Registry); nil skips step decoding
	// (analyze needs only the formulas) but still rejects a profile without
	// steps.
	Registry StepConfigs
	// Overrides are --set key=value pairs.
	Overrides map[string]string
	// Lookup finds the profile an `extends:` names; nil: DefaultLookup
	// (built-in names and file paths).
	Lookup Lookup
}

// LoadFile reads and loads a profile file.
func LoadFile(path string, opt Options) (*Loaded, error) {
	b, err := boundedfile.Read(path, "profile", boundedfile.MaxProfileBytes)
	if err != nil {
		return nil, err
	}
	l, err := Load(b, path, opt)
	if l != nil {
		l.Ref.Source = path
	}
	return l, err
}

var topKeys = []string{"name", "extends", "override", "version", "description", "spec", "parameters", "quick", "steps", "derive", "metrics", "checks", "stage_energy"}

// Load parses, validates and compiles a profile. Every problem is returned
// together as an ErrorList, each with file:line:col.
//
// The phases: parse the document; decode the top-level keys; resolve the
// parameters (with --set overrides) and the quick set; decode every step's
// `with:` into its kind's configuration; collect the formulas (derive,
// metrics, checks); compile them all against the typed environment.
func Load(src []byte, file string, opt Options) (*Loaded, error) {
	root, err := parseRoot(src, file)
	if err != nil {
		return nil, err
	}
	flat, err := flatten(root, src, file, opt.Lookup)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file)
	if flat != nil {
		root, src = flat.root, nil
		d.flat = flat
		d.SetFileOf(flat.fileOf)
	}
	p, nodes := d.header(root)
	p.Parameters = d.params(nodes["parameters"])
	params, values := d.resolveParams(p.Parameters, opt.Overrides)
	p.Quick = d.quick(nodes["quick"], p.Parameters)
	steps := d.steps(nodes["steps"], root, p, params, values, opt.Registry, src)

	f := &formulas{exprNodes: map[string]map[string]*yaml.Node{}, nameNodes: map[string]*yaml.Node{}}
	p.Derive = d.derive(nodes["derive"], f)
	p.Metrics = declList(d, nodes["metrics"], "metrics", f, metricDef)
	p.Checks = declList(d, nodes["checks"], "checks", f, checkDef)
	d.invalidates(p, f)
	if len(f.defs) == 0 {
		d.Errorf(root, "metrics", "a profile needs at least one metric")
	}
	f.defs = append(f.defs, d.stageEnergy(p, nodes["stage_energy"], f.exprNodes, f.nameNodes)...)
	var prog *metricdefs.Program
	if d.OK() || len(f.defs) > 0 {
		prog = d.compile(f, params, p.Parameters, root, src)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if flat != nil {
		if src, err = flat.render(false); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(src)
	return &Loaded{
		flat:    flat,
		Profile: p,
		Ref:     record.ProfileRef{Name: p.Name, Version: p.Version, SHA256: hex.EncodeToString(sum[:]), Source: file},
		Source:  src,
		Params:  values,
		Steps:   steps,
		Program: prog,
	}, nil
}

// parseRoot parses the document and returns its root mapping.
func parseRoot(src []byte, file string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line, col := yamlstrict.SyntaxErrorPos(src, err)
		return nil, ErrorList{{File: file, Line: line, Col: col, Msg: yamlstrict.CleanError(err)}}
	}
	if len(doc.Content) == 0 {
		return nil, ErrorList{{File: file, Line: 1, Col: 1, Msg: "empty profile"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, ErrorList{{File: file, Line: root.Line, Col: root.Column, Msg: "a profile must be a mapping with name, parameters, steps, derive, metrics and checks"}}
	}
	return root, nil
}

// header decodes the scalar top-level keys and returns the value node of
// every known key, for the phases that follow.
func (d *decoder) header(root *yaml.Node) (*Profile, map[string]*yaml.Node) {
	p := &Profile{}
	nodes := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if _, dup := nodes[k.Value]; dup {
			d.Errorf(k, "", "duplicate key %q", k.Value)
			continue
		}
		nodes[k.Value] = v
		switch k.Value {
		case "name":
			d.Value(v, reflectOf(&p.Name), "name")
		case "version":
			d.Value(v, reflectOf(&p.Version), "version")
		case "description":
			d.Value(v, reflectOf(&p.Description), "description")
		case "spec":
			d.Value(v, reflectOf(&p.Spec), "spec")
		case "parameters", "quick", "steps", "derive", "metrics", "checks", "stage_energy":
		default:
			d.Errorf(k, "", "unknown key %q (valid keys: %s)", k.Value, strings.Join(topKeys, ", "))
		}
	}
	if p.Name == "" {
		d.Errorf(root, "name", "a profile needs a name")
	} else if err := safename.Check("profile name", p.Name); err != nil {
		// The name becomes part of the run id, a directory name.
		d.Errorf(nodes["name"], "name", "%v", err)
	}
	return p, nodes
}

// steps decodes the list of steps into p.Steps and returns them ready to
// run (without a registry, configurations are left nil).
func (d *decoder) steps(n, root *yaml.Node, p *Profile, params []metricdefs.Param, values map[string]any, reg StepConfigs, src []byte) []Step {
	if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.Errorf(orRoot(n, root), "steps", "a profile needs a non-empty list of steps")
		return nil
	}
	var out []Step
	var kindNodes []*yaml.Node // of each step in out, for stepCombos
	for i, item := range n.Content {
		where := fmt.Sprintf("steps[%d]", i)
		var sd StepDecl
		present := d.Strict(item, &sd, where)
		p.Steps = append(p.Steps, sd)
		if _, ok := present["kind"]; !ok {
			d.Errorf(item, where, "a step needs a kind")
			continue
		}
		st := Step{Index: i + 1, Kind: sd.Kind, Name: sd.Name}
		where = fmt.Sprintf("steps[%d] (%s)", i, sd.Kind)
		if sd.When != "" {
			c, ce := metricdefs.CompileCondition(params, sd.When)
			if ce != nil {
				d.exprError(present["when"], where+".when", ce, src)
			}
			st.When = c
		}
		if reg != nil {
			cfg, ok := d.stepConfig(reg, sd.Kind, item, present, values, where)
			if !ok {
				continue
			}
			st.Config = cfg
		}
		out = append(out, st)
		kindNodes = append(kindNodes, present["kind"])
	}
	d.stepCombos(out, kindNodes)
	return out
}

// stepConfig decodes a step's `with:` (parameters interpolated) strictly
// into a fresh configuration of its kind and validates it. It reports false
// when the step cannot be kept (unknown kind, unknown parameter).
func (d *decoder) stepConfig(reg StepConfigs, kind string, item *yaml.Node, present map[string]*yaml.Node, values map[string]any, where string) (any, bool) {
	cfg, ok := reg.NewConfig(kind)
	if !ok {
		d.Errorf(present["kind"], where, "unknown step kind %q (known kinds: %s)", kind, strings.Join(reg.Names(), ", "))
		return nil, false
	}
	if w := present["with"]; w != nil && !(w.Kind == yaml.ScalarNode && w.Tag == "!!null") {
		before := d.Len()
		with := d.interpolate(w, values, where+".with")
		if d.Len() > before {
			return nil, false // the unknown parameter is the error; decoding would only repeat it
		}
		d.Strict(with, cfg, where+".with")
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			d.Errorf(orRoot(present["with"], item), where+".with", "%s", err)
		}
	}
	return cfg, true
}

// formulas collects every formula of a profile for compilation, with the
// nodes that compile errors are placed at.
type formulas struct {
	defs      []metricdefs.Def
	exprNodes map[string]map[string]*yaml.Node // def name → field → node
	nameNodes map[string]*yaml.Node
}

func (f *formulas) add(def metricdefs.Def, present map[string]*yaml.Node, name *yaml.Node) {
	f.defs = append(f.defs, def)
	f.exprNodes[def.Name] = present
	f.nameNodes[def.Name] = name
}

// derive decodes the derive mapping: `name: expression` or
// `name: {expr, when, na, unit, description}`.
func (d *decoder) derive(n *yaml.Node, f *formulas) []DeriveDecl {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "derive", "expected a mapping of name: expression, got a %s", yamlstrict.KindName(n))
		return nil
	}
	var out []DeriveDecl
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		where := "derive." + k.Value
		dd := DeriveDecl{Name: k.Value}
		present := map[string]*yaml.Node{}
		switch v.Kind {
		case yaml.ScalarNode:
			dd.Expr = v.Value
			present[metricdefs.FieldExpr] = v
		case yaml.MappingNode:
			present = d.Strict(v, &dd, where)
		default:
			d.Errorf(v, where, "expected an expression or a mapping {expr, when, na, unit, description}, got a %s", yamlstrict.KindName(v))
			continue
		}
		if dd.Expr == "" {
			d.Errorf(v, where, "a derived value needs an expression")
			continue
		}
		out = append(out, dd)
		f.add(metricdefs.Def{Name: k.Value, Kind: metricdefs.KindDerived, Expr: dd.Expr, When: dd.When, NA: dd.NA,
			Unit: dd.Unit, Description: dd.Description}, present, k)
	}
	return out
}

// declList decodes a list of named formulas (metrics or checks): each item
// strictly into a T, which toDef turns into its definition, or into what
// the item lacks (a non-empty message).
func declList[T any](d *decoder, n *yaml.Node, section string, f *formulas, toDef func(*T) (metricdefs.Def, string)) []T {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, section, "expected a list, got a %s", yamlstrict.KindName(n))
		return nil
	}
	var out []T
	for i, item := range n.Content {
		where := fmt.Sprintf("%s[%d]", section, i)
		var decl T
		present := d.Strict(item, &decl, where)
		def, missing := toDef(&decl)
		if missing != "" {
			d.Errorf(item, where, "%s", missing)
			continue
		}
		out = append(out, decl)
		f.add(def, present, present["name"])
	}
	return out
}

func metricDef(m *MetricDecl) (metricdefs.Def, string) {
	if m.Name == "" || m.Expr == "" {
		return metricdefs.Def{}, "a metric needs a name and an expr"
	}
	if err := metricdefs.CheckBoundary(m.Boundary); err != nil {
		return metricdefs.Def{}, err.Error()
	}
	return metricdefs.Def{Name: m.Name, Kind: metricdefs.KindMetric, Expr: m.Expr, When: m.When, NA: m.NA,
		Unit: m.Unit, Description: m.Description, Format: m.Format, Boundary: m.Boundary, Detail: m.Detail, Label: m.Label}, ""
}

func checkDef(c *CheckDecl) (metricdefs.Def, string) {
	if c.Name == "" || c.Expr == "" {
		return metricdefs.Def{}, "a check needs a name and an expr"
	}
	if c.Severity == "" {
		c.Severity = metricdefs.SeverityWarn
	}
	return metricdefs.Def{Name: c.Name, Kind: metricdefs.KindCheck, Expr: c.Expr, When: c.When, NA: c.NA,
		Detail: c.Detail, Severity: c.Severity, Message: c.Message, Description: c.Description}, ""
}

// compile compiles every formula against the typed environment and places
// each compile error at its expression, else its name, else the parameter
// it concerns, else the document's root.
func (d *decoder) compile(f *formulas, params []metricdefs.Param, decls []ParamDecl, root *yaml.Node, src []byte) *metricdefs.Program {
	prog, cerrs := metricdefs.Compile(metricdefs.Spec{Params: params, Defs: f.defs})
	for _, ce := range cerrs {
		where := ce.Def + "." + ce.Field
		if ce.Field == metricdefs.FieldName {
			where = ce.Def
		}
		node := f.exprNodes[ce.Def][ce.Field]
		if node == nil {
			node = f.nameNodes[ce.Def]
		}
		if node == nil {
			for _, pd := range decls {
				if pd.Name == ce.Def {
					node = pd.node
				}
			}
		}
		d.exprError(orRoot(node, root), where, ce, src)
	}
	return prog
}

func orRoot(n, root *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return root
}

func reflectOf(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// exprError places an expression error at its line and column in the file.
// expr reports a 1-based line and a 0-based column within the expression.
func (d *decoder) exprError(n *yaml.Node, where string, ce *metricdefs.CompileError, src []byte) {
	line, col := n.Line, n.Column
	src = d.srcAt(n, src)
	if ce.Line > 0 && n.Kind == yaml.ScalarNode {
		switch n.Style {
		case yaml.LiteralStyle, yaml.FoldedStyle:
			// The block's content starts on the next line; expr's column
			// counts from the block's indentation.
			line = n.Line + ce.Line
			col = indentOf(src, n.Line+1) + 1 + ce.Column
		case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
			line = n.Line + ce.Line - 1
			if ce.Line == 1 {
				col = n.Column + 1 + ce.Column
			} else {
				col = indentOf(src, line) + 1 + ce.Column
			}
		default:
			line = n.Line + ce.Line - 1
			if ce.Line == 1 {
				col = n.Column + ce.Column
			} else {
				col = indentOf(src, line) + 1 + ce.Column
			}
		}
	}
	d.Add(&Error{File: d.FileAt(n), Line: line, Col: col, Where: where, Msg: firstLine(ce.Msg)})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func indentOf(src []byte, line int) int {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return 0
	}
	l := lines[line-1]
	return len(l) - len(strings.TrimLeft(l, " \t"))
}

// quick decodes the quick parameter set: `name: value` for declared
// parameters, each value valid for the parameter's type.
func (d *decoder) quick(n *yaml.Node, decls []ParamDecl) map[string]string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "quick", "expected a mapping of parameter: value, got a %s", yamlstrict.KindName(n))
		return nil
	}
	types := map[string]string{}
	var names []string
	for _, pd := range decls {
		types[pd.Name] = pd.Type
		names = append(names, pd.Name)
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		typ, ok := types[k.Value]
		if !ok {
			d.Errorf(k, "quick", "unknown parameter %q (this profile has: %s)", k.Value, strings.Join(names, ", "))
			continue
		}
		if v.Kind != yaml.ScalarNode {
			d.Errorf(v, "quick."+k.Value, "expected a scalar, got a %s", yamlstrict.KindName(v))
			continue
		}
		if _, err := parseParam(typ, v.Value); err != nil {
			d.Errorf(v, "quick."+k.Value, "%s", err)
			continue
		}
		out[k.Value] = v.Value
	}
	return out
}

// params decodes the parameters mapping: `name: value` (type from the
// value) or `name: {type, default, description}`.
func (d *decoder) params(n *yaml.Node) []ParamDecl {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "parameters", "expected a mapping of name: default, got a %s", yamlstrict.KindName(n))
		return nil
	}
	var out []ParamDecl
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		where := "parameters." + k.Value
		pd := ParamDecl{Name: k.Value, node: k}
		valNode := v
		if v.Kind == yaml.MappingNode {
			var pl paramLong
			present := d.Strict(v, &pl, where)
			if present["default"] == nil {
				d.Errorf(v, where, "a parameter needs a default")
				continue
			}
			valNode = present["default"]
			pd.Type, pd.Description, pd.Min, pd.Max = pl.Type, pl.Description, pl.Min, pl.Max
		}
		if valNode.Kind != yaml.ScalarNode {
			d.Errorf(valNode, where, "a parameter's default must be a scalar, got a %s", yamlstrict.KindName(valNode))
			continue
		}
		if pd.Type == "" {
			pd.Type = inferType(valNode)
		}
		val, err := parseParam(pd.Type, valNode.Value)
		if err != nil {
			d.Errorf(valNode, where, "%s", err)
			continue
		}
		if err := pd.inBounds(val); err != nil {
			d.Errorf(valNode, where, "default %s", err)
			continue
		}
		pd.Default = val
		out = append(out, pd)
	}
	return out
}

func inferType(n *yaml.Node) string {
	switch n.ShortTag() {
	case "!!int":
		return TypeInt
	case "!!float":
		return TypeFloat
	case "!!bool":
		return TypeBool
	}
	if _, err := time.ParseDuration(n.Value); err == nil {
		return TypeDuration
	}
	return TypeString
}

func parseParam(typ, s string) (any, error) {
	switch typ {
	case TypeInt:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return int(v), nil
	case TypeFloat:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number", s)
		}
		return v, nil
	case TypeBool:
		v, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean (true or false)", s)
		}
		return v, nil
	case TypeDuration:
		return parseDuration(s)
	case TypeString:
		return s, nil
	}
	return nil, fmt.Errorf("unknown parameter type %q (valid: int, float, bool, string, duration)", typ)
}

// inBounds checks a parameter's value against its declared min and max
// (a duration in seconds).
func (pd *ParamDecl) inBounds(v any) error {
	x, ok := num.Float(exprValue(v))
	if !ok {
		return nil
	}
	switch {
	case pd.Min != nil && x < *pd.Min:
		return fmt.Errorf("%v is below the minimum %v", v, *pd.Min)
	case pd.Max != nil && x > *pd.Max:
		return fmt.Errorf("%v is above the maximum %v", v, *pd.Max)
	}
	return nil
}

// exprValue is what expressions see for a parameter: durations in seconds.
func exprValue(v any) any {
	if d, ok := v.(time.Duration); ok {
		return d.Seconds()
	}
	return v
}

// resolveParams applies --set overrides. It returns the parameters as
// metricdefs declares them and the resolved values by name.
func (d *decoder) resolveParams(decls []ParamDecl, overrides map[string]string) ([]metricdefs.Param, map[string]any) {
	byName := map[string]*ParamDecl{}
	var names []string
	for i := range decls {
		byName[decls[i].Name] = &decls[i]
		names = append(names, decls[i].Name)
	}
	resolved := map[string]any{}
	raw := map[string]any{}
	for _, pd := range decls {
		raw[pd.Name] = pd.Default
	}
	for _, k := range sortedKeys(overrides) {
		pd, ok := byName[k]
		if !ok {
			d.Add(&Error{File: "--set", Where: k, Msg: fmt.Sprintf("unknown parameter %q (this profile has: %s)", k, strings.Join(names, ", "))})
			continue
		}
		v, err := parseParam(pd.Type, overrides[k])
		if err == nil {
			err = pd.inBounds(v)
		}
		if err != nil {
			d.Add(&Error{File: "--set", Where: k, Msg: fmt.Sprintf("parameter of type %s: %s", pd.Type, err)})
			continue
		}
		raw[k] = v
	}
	params := make([]metricdefs.Param, 0, len(decls))
	for _, pd := range decls {
		params = append(params, metricdefs.Param{Name: pd.Name, Value: exprValue(pd.Default)})
		resolved[pd.Name] = exprValue(raw[pd.Name])
	}
	d.rawParams = raw
	return params, resolved
}

var interpRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// interpolate returns a copy of n with ${param} replaced in every scalar.
// A scalar that is exactly ${param} takes the parameter's type.
func (d *decoder) interpolate(n *yaml.Node, values map[string]any, where string) *yaml.Node {
	c := *n
	d.sameFile(&c, n)
	if n.Kind == yaml.ScalarNode {
		if !strings.Contains(n.Value, "${") {
			return &c
		}
		whole := interpRE.FindStringSubmatch(n.Value)
		c.Value = interpRE.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := strings.TrimSpace(m[2 : len(m)-1])
			v, ok := d.rawParams[name]
			if !ok {
				d.Errorf(n, where, "unknown parameter %q in %q", name, n.Value)
				return m
			}
			return formatParam(v)
		})
		if whole != nil && whole[0] == n.Value {
			if v, ok := d.rawParams[strings.TrimSpace(whole[1])]; ok {
				c.Tag = paramTag(v)
				c.Style = 0
			}
		} else {
			c.Tag = "!!str"
		}
		return &c
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = d.interpolate(ch, values, where)
	}
	return &c
}

func formatParam(v any) string {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func paramTag(v any) string {
	switch v.(type) {
	case int:
		return "!!int"
	case float64:
		return "!!float"
	case bool:
		return "!!bool"
	}
	return "!!str"
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// SummaryMode says when the summary (the default output of run and
// analyze) shows a metric: never (""), always (`summary: true`), or only
// when it has a value (`summary: applicable`: an extra figure, such as
// the CPU/DRAM J/token of a run with RAPL or the J/token of the requests
// that met an SLO, that would otherwise add a line of "not applicable").
type SummaryMode string

// The summary modes.
const (
	SummaryNever      SummaryMode = ""
	SummaryAlways     SummaryMode = "always"
	SummaryApplicable SummaryMode = "applicable"
)

// UnmarshalYAML reads true, false or applicable.
func (m *SummaryMode) UnmarshalYAML(n *yaml.Node) error {
	var b bool
	if n.Decode(&b) == nil {
		*m = SummaryNever
		if b {
			*m = SummaryAlways
		}
		return nil
	}
	if n.Value == string(SummaryApplicable) {
		*m = SummaryApplicable
		return nil
	}
	return fmt.Errorf("summary: want true, false or applicable, got %q", n.Value)
}
