package metricdefs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/joulebench/joulebench/archive/record"
)

// Kind is what a definition produces.
type Kind string

// Definition kinds.
const (
	KindDerived Kind = "derived"
	KindMetric  Kind = "metric"
	KindCheck   Kind = "check"
)

// Check severities.
const (
	SeverityWarn    = "warn"
	SeverityExclude = "exclude"
	SeverityFail    = "fail"
)

// Def is one formula of a profile: a derived value, a metric or a check.
type Def struct {
	Name string
	Kind Kind
	Expr string
	// When, if set, is a boolean expression; when it is false the value is
	// not applicable (NA says why).
	When string
	NA   string
	// Detail, for checks, is an optional expression whose value is appended
	// to Message when the check fails; for metrics, one whose value is the
	// note of a metric that has a value (its inputs).
	Detail      string
	Unit        string
	Description string
	Format      string
	Severity    string
	Message     string
	// Boundary, for metrics, is the power domains the value covers
	// ("gpu", "cpu+dram", "node"; see CheckBoundary), shown in the
	// headings of tables and reports.
	Boundary string
	// Label, for metrics, is the name people read (tables, summary).
	Label string
	// Invalidates, for checks, is what a failure invalidates: metric
	// names, or ["all"] (the whole run); empty: the severity's default
	// (record.Result.Invalidated).
	Invalidates []string
}

// CheckBoundary checks a metric's boundary: domains of
// record.Domains joined by "+", each once; empty is fine (no energy).
func CheckBoundary(b string) error {
	if b == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, d := range strings.Split(b, "+") {
		if !slices.Contains(record.Domains, d) || seen[d] {
			return fmt.Errorf("boundary %q: want domains of %s joined by +, each once (e.g. cpu+dram)", b, strings.Join(record.Domains, ", "))
		}
		seen[d] = true
	}
	return nil
}

// Param is a profile parameter with its resolved value (int, float64, bool
// or string; durations are float64 seconds).
type Param struct {
	Name  string
	Value any
}

// Spec is everything Compile needs.
type Spec struct {
	Params []Param
	Defs   []Def
}

// Field names of a Def that hold expressions.
const (
	FieldName   = "name"
	FieldExpr   = "expr"
	FieldWhen   = "when"
	FieldDetail = "detail"
	FieldFormat = "format"
)

// CompileError is a problem with one definition. Line is 1-based and Column
// 0-based within the expression source (as expr reports them); both are 0
// when the error has no position inside the expression.
type CompileError struct {
	Def    string
	Field  string
	Line   int
	Column int
	Msg    string
}

func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (%s %d:%d): %s", e.Def, e.Field, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s (%s): %s", e.Def, e.Field, e.Msg)
}

// Reserved names are the data every expression sees.
var reservedNames = []string{"ctx", "run", "stages", "events", "requests", "devices"}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type compiled struct {
	Def
	deps   []string
	prog   *vm.Program
	when   *vm.Program
	detail *vm.Program
	typ    reflect.Type
	field  int
	// baselineNames are the names read as baseline.NAME; usesBaseline is
	// whether the formula reads `baseline` at all (baseline.go).
	baselineNames []string
	usesBaseline  bool
}

// Program is a compiled profile: every formula compiled once against the
// typed environment, in dependency order.
type Program struct {
	params  []Param
	order   []*compiled
	envType reflect.Type
	// runType is envType with the fields of the derived values typed
	// []interface{} of type any: what Evaluate fills, so that such a value
	// can be held compactly (compact.go).
	runType reflect.Type
	fields  map[string]int
	// baseline is whether `baseline` is the baseline results (it is not in
	// an older profile that declares a parameter of that name).
	baseline bool
	// concurrent: definitions are evaluated in parallel as their
	// dependencies allow (not when a formula reads $env, which could see
	// values of definitions it does not name).
	concurrent bool
}

// Order returns the definitions in evaluation order.
func (p *Program) Order() []Def {
	out := make([]Def, len(p.order))
	for i, c := range p.order {
		out[i] = c.Def
	}
	return out
}

var (
	anyType     = reflect.TypeOf((*any)(nil)).Elem()
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	baseFields  = []reflect.StructField{
		{Name: "Ctx", Type: contextType, Tag: `expr:"ctx"`},
		{Name: "Run", Type: reflect.TypeOf(RunInfo{}), Tag: `expr:"run"`},
		{Name: "Stages", Type: reflect.TypeOf(map[string]*Stage{}), Tag: `expr:"stages"`},
		{Name: "Events", Type: reflect.TypeOf(map[string]float64{}), Tag: `expr:"events"`},
		{Name: "Requests", Type: reflect.TypeOf([]*record.Request{}), Tag: `expr:"requests"`},
		{Name: "Devices", Type: reflect.TypeOf([]Device{}), Tag: `expr:"devices"`},
	}
)

// ParamEnvType builds the environment of step `when:` expressions: the
// parameters and `engine` (the engine kind).
func paramFields(params []Param) []reflect.StructField {
	fs := make([]reflect.StructField, 0, len(params))
	for i, p := range params {
		t := anyType
		if p.Value != nil {
			t = reflect.TypeOf(p.Value)
		}
		fs = append(fs, reflect.StructField{Name: fmt.Sprintf("P%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf(`expr:%q`, p.Name))})
	}
	return fs
}

// Compile parses, orders and type-checks every definition. All problems are
// returned together.
func Compile(spec Spec) (*Program, []*CompileError) {
	prog, errs, lazy := compile(spec, true)
	if len(errs) > 0 && lazy {
		// The errors of the profile as written, without the lazy ITL
		// (whose hidden functions could otherwise appear in them).
		prog, errs, _ = compile(spec, false)
	}
	return prog, errs
}

// compile is Compile; allowLazy lets derived values hold a lazy ITL
// (itl_lazy.go), and lazy reports whether one does.
func compile(spec Spec, allowLazy bool) (_ *Program, _ []*CompileError, lazy bool) {
	k := &compiler{spec: spec, defs: map[string]*compiled{}, bad: map[string]bool{},
		withBaseline: !hasDef(spec, BaselineName), types: map[string]reflect.Type{}, lazyITL: map[string]bool{}}
	k.declare()
	k.dependencies()
	k.sortByDependency()
	k.environment(allowLazy)
	k.learnTypes()
	prog := k.compileAll()
	lazy = len(k.lazyITL) > 0
	if len(k.errs) > 0 {
		return nil, k.errs, lazy
	}
	prog.order = k.order
	prog.concurrent = !readsEnv(k.list)
	return prog, nil, lazy
}

// compiler holds one compilation's state between its phases: declare the
// names, find each formula's dependencies, sort by them, build the
// environment, learn each definition's type (pass 1), then compile
// everything against the final environment (pass 2). Every problem is
// collected in errs, in that order.
type compiler struct {
	spec Spec
	errs []*CompileError
	// defs by name, and list in profile order, of the definitions whose
	// names are fine.
	defs map[string]*compiled
	list []*compiled
	// bad are the definitions not compiled in the passes (a parse error,
	// a bad baseline reference, a cycle).
	bad map[string]bool
	// withBaseline: `baseline` is the baseline results (no definition of
	// that name).
	withBaseline bool
	order        []*compiled
	// base are the environment's fields before the definitions'.
	base []reflect.StructField
	// lazyCands: derived values that may hold a lazy ITL (itl_lazy.go);
	// lazyITL: those that do, decided in pass 1 for each candidate whose
	// formula compiles as it is.
	lazyCands map[string][]float64
	lazyITL   map[string]bool
	// types learnt in pass 1.
	types map[string]reflect.Type
}

func (k *compiler) addErr(def, field string, err error) {
	ce := &CompileError{Def: def, Field: field, Msg: err.Error()}
	var fe *file.Error
	if errors.As(err, &fe) {
		ce.Line, ce.Column, ce.Msg = fe.Line, fe.Column, fe.Message
	}
	k.errs = append(k.errs, ce)
}

// declare checks the names of the parameters and definitions: identifiers,
// none taken by a reserved name, a built-in function or another name.
func (k *compiler) declare() {
	taken := map[string]string{}
	for _, r := range reservedNames {
		taken[r] = "a reserved name"
	}
	for _, b := range builtinDefs() {
		taken[b.Name] = "a built-in function"
	}
	for _, p := range k.spec.Params {
		if !identRE.MatchString(p.Name) {
			k.addErr(p.Name, FieldName, fmt.Errorf("parameter name %q is not an identifier", p.Name))
			continue
		}
		if what, ok := taken[p.Name]; ok {
			k.addErr(p.Name, FieldName, fmt.Errorf("parameter %q clashes with %s", p.Name, what))
			continue
		}
		taken[p.Name] = "a parameter"
	}
	for _, d := range k.spec.Defs {
		if !identRE.MatchString(d.Name) {
			k.addErr(d.Name, FieldName, fmt.Errorf("name %q is not an identifier (letters, digits, _)", d.Name))
			continue
		}
		if what, ok := taken[d.Name]; ok {
			k.addErr(d.Name, FieldName, fmt.Errorf("%s name %q clashes with %s", d.Kind, d.Name, what))
			continue
		}
		taken[d.Name] = "a " + string(d.Kind)
		c := &compiled{Def: d}
		k.defs[d.Name] = c
		k.list = append(k.list, c)
	}
}

// dependencies parses each formula and records the definitions it names
// (and the baseline values it reads).
func (k *compiler) dependencies() {
	for _, c := range k.list {
		seen := map[string]bool{}
		for _, f := range exprFields(c.Def) {
			tree, err := parser.Parse(f.src)
			if err != nil {
				k.addErr(c.Name, f.field, err)
				k.bad[c.Name] = true
				continue
			}
			v := &identVisitor{}
			ast.Walk(&tree.Node, v)
			if k.withBaseline {
				names, uses := baselineRefs(&tree.Node)
				c.baselineNames = append(c.baselineNames, names...)
				c.usesBaseline = c.usesBaseline || uses
			}
			for _, id := range v.names {
				if _, ok := k.defs[id]; ok && !seen[id] {
					seen[id] = true
					c.deps = append(c.deps, id)
				}
			}
		}
		sort.Strings(c.deps)
	}
	if k.withBaseline {
		for _, e := range checkBaselineRefs(k.list, k.defs) {
			k.errs = append(k.errs, e)
			k.bad[e.Def] = true
		}
	}
}

// sortByDependency orders the definitions so that each comes after those
// it names; the definitions of a cycle are reported.
func (k *compiler) sortByDependency() {
	order, cycles := topoSort(k.list, k.defs)
	for _, cyc := range cycles {
		k.addErr(cyc[0], FieldExpr, fmt.Errorf("dependency cycle: %s", strings.Join(cyc, " -> ")))
		for _, n := range cyc[:len(cyc)-1] {
			k.bad[n] = true
		}
	}
	k.order = order
}

// environment builds the fields every formula sees before the
// definitions (the data, the parameters, baseline) and finds the lazy ITL
// candidates.
func (k *compiler) environment(allowLazy bool) {
	k.base = append(append([]reflect.StructField{}, baseFields...), paramFields(exprParams(k.spec.Params, k.withBaseline))...)
	if k.withBaseline {
		k.base = append(k.base, baselineField)
	}
	if allowLazy {
		k.lazyCands = lazyITLCandidates(k.list)
	}
}

// options are expr's options for an environment of type t.
func (k *compiler) options(t reflect.Type) []expr.Option {
	o := []expr.Option{expr.Env(reflect.New(t).Elem().Interface()), expr.WithContext("ctx")}
	o = append(o, builtinOptions()...)
	o = append(o, checkedIntOptions()...)
	o = append(o, itlLazyOptions()...)
	o = append(o, compactOptions()...)
	return append(o, checkedAnyOptions()...)
}

// rootPatched are options o that make definition name's root a lazy ITL.
func (k *compiler) rootPatched(o []expr.Option, name string) []expr.Option {
	return append(o[:len(o):len(o)], expr.Patch(itlRootPatch{want: k.lazyCands[name]}))
}

// fieldsFor is the environment of the definitions after upto: the base
// fields and upto's, of their learnt types (any when not known).
func (k *compiler) fieldsFor(upto []*compiled) []reflect.StructField {
	fs := append([]reflect.StructField{}, k.base...)
	for i, c := range upto {
		t := k.types[c.Name]
		if t == nil {
			t = anyType
		}
		fs = append(fs, reflect.StructField{Name: fmt.Sprintf("D%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf(`expr:%q`, c.Name))})
	}
	return fs
}

// learnTypes is pass 1: each definition's type, in dependency order,
// against the types of those before it. Errors are left to pass 2.
func (k *compiler) learnTypes() {
	for i, c := range k.order {
		if k.bad[c.Name] {
			continue
		}
		t := reflect.StructOf(k.fieldsFor(k.order[:i]))
		prog, err := expr.Compile(c.Expr, k.options(t)...)
		if err != nil {
			continue // reported in pass 2
		}
		if _, ok := k.lazyCands[c.Name]; ok {
			if lp, err := expr.Compile(c.Expr, k.rootPatched(k.options(t), c.Name)...); err == nil && lp.Node().Type() == itlValuesType {
				prog = lp
				k.lazyITL[c.Name] = true
			}
		}
		rt := prog.Node().Type()
		if rt == nil || rt.Kind() == reflect.Interface {
			rt = anyType
		}
		k.types[c.Name] = rt
	}
}

// compileAll is pass 2: every definition against the final environment.
func (k *compiler) compileAll() *Program {
	final := k.fieldsFor(k.order)
	envType := reflect.StructOf(final)
	prog := &Program{params: k.spec.Params, envType: envType, runType: runEnvType(final, k.defs), fields: map[string]int{}, baseline: k.withBaseline}
	for i, f := range final {
		prog.fields[exprTag(f)] = i
	}
	o := k.options(envType)
	known := map[string]bool{}
	for n := range prog.fields {
		known[n] = true
	}
	for _, b := range builtinDefs() {
		known[b.Name] = true
	}
	for _, c := range k.order {
		c.field = prog.fields[c.Name]
		c.typ = envType.Field(c.field).Type
		if k.bad[c.Name] {
			continue
		}
		co := o
		if k.lazyITL[c.Name] {
			co = k.rootPatched(o, c.Name)
		}
		if k.compileExpr(c, co, known) {
			k.compileExtras(c, o)
		}
	}
	return prog
}

// runEnvType is the environment Evaluate fills: the fields of final,
// those of the derived values typed []interface{} as any (compact.go).
func runEnvType(final []reflect.StructField, defs map[string]*compiled) reflect.Type {
	fs := append([]reflect.StructField{}, final...)
	for i, f := range fs {
		if c, ok := defs[exprTag(f)]; ok && c.Kind == KindDerived && f.Type == anyListType {
			fs[i].Type = anyType
		}
	}
	return reflect.StructOf(fs)
}

// compileExpr compiles a definition's formula and checks its type and
// format; false when it does not compile.
func (k *compiler) compileExpr(c *compiled, o []expr.Option, known map[string]bool) bool {
	p, err := expr.Compile(c.Expr, o...)
	if err == nil {
		if fe := unknownName(c.Expr, known); fe != nil {
			err = fe
		}
	}
	if err != nil {
		k.addErr(c.Name, FieldExpr, err)
		return false
	}
	c.prog = p
	if err := checkResultType(c.Kind, p.Node().Type()); err != nil {
		k.addErr(c.Name, FieldExpr, err)
	}
	if c.Kind == KindMetric {
		if err := checkFormat(c.Format, p.Node().Type()); err != nil {
			k.addErr(c.Name, FieldFormat, err)
		}
	}
	return true
}

// compileExtras compiles a definition's when and detail and checks a
// check's severity.
func (k *compiler) compileExtras(c *compiled, o []expr.Option) {
	if c.When != "" {
		w, err := expr.Compile(c.When, o...)
		if err != nil {
			k.addErr(c.Name, FieldWhen, err)
		} else if !isBoolish(w.Node().Type()) {
			k.addErr(c.Name, FieldWhen, fmt.Errorf("when must be a boolean expression, not %s", w.Node().Type()))
		}
		c.when = w
	}
	if c.Detail != "" {
		dp, err := expr.Compile(c.Detail, o...)
		if err != nil {
			k.addErr(c.Name, FieldDetail, err)
		}
		c.detail = dp
	}
	if c.Kind == KindCheck {
		switch c.Severity {
		case SeverityWarn, SeverityExclude, SeverityFail:
		default:
			k.addErr(c.Name, "severity", fmt.Errorf("severity must be warn, exclude or fail, not %q", c.Severity))
		}
	}
}

type exprField struct{ field, src string }

func exprFields(d Def) []exprField {
	fs := []exprField{{FieldExpr, d.Expr}}
	if d.When != "" {
		fs = append(fs, exprField{FieldWhen, d.When})
	}
	if d.Detail != "" {
		fs = append(fs, exprField{FieldDetail, d.Detail})
	}
	return fs
}

func exprTag(f reflect.StructField) string { return f.Tag.Get("expr") }

func isBoolish(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.Bool || t.Kind() == reflect.Interface
}

func checkResultType(k Kind, t reflect.Type) error {
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	switch k {
	case KindCheck:
		if t.Kind() != reflect.Bool {
			return fmt.Errorf("a check must be a boolean expression, this one is %s", t)
		}
	case KindMetric:
		switch t.Kind() {
		case reflect.Bool, reflect.String, reflect.Float64, reflect.Float32,
			reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		default:
			return fmt.Errorf("a metric must be a number, string or boolean, this one is %s", t)
		}
	}
	return nil
}

type identVisitor struct {
	names []string
	nodes []*ast.IdentifierNode
	lets  map[string]bool
}

func (v *identVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		v.names = append(v.names, n.Value)
		v.nodes = append(v.nodes, n)
	case *ast.VariableDeclaratorNode:
		if v.lets == nil {
			v.lets = map[string]bool{}
		}
		v.lets[n.Name] = true
	}
}

// unknownName finds an identifier that names nothing in the environment.
// expr's checker misses some (an argument after one of unknown type in an
// overloaded function call), so every name is checked here too.
func unknownName(src string, known map[string]bool) *file.Error {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	v := &identVisitor{}
	ast.Walk(&tree.Node, v)
	for _, n := range v.nodes {
		if known[n.Value] || v.lets[n.Value] || strings.HasPrefix(n.Value, "$") {
			continue
		}
		if _, ok := builtin.Index[n.Value]; ok {
			continue
		}
		e := &file.Error{Location: n.Location(), Message: "unknown name " + n.Value}
		return e.Bind(file.NewSource(src))
	}
	return nil
}

// topoSort orders definitions so that each comes after what it references,
// keeping the profile's order where there is a choice. It returns the
// cycles it found, each as a path a -> b -> ... -> a.
func topoSort(list []*compiled, defs map[string]*compiled) ([]*compiled, [][]string) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var order []*compiled
	var cycles [][]string
	var stack []string
	var visit func(c *compiled)
	visit = func(c *compiled) {
		color[c.Name] = grey
		stack = append(stack, c.Name)
		for _, d := range c.deps {
			switch color[d] {
			case white:
				visit(defs[d])
			case grey:
				i := len(stack) - 1
				for stack[i] != d {
					i--
				}
				cyc := append(append([]string{}, stack[i:]...), d)
				cycles = append(cycles, cyc)
			}
		}
		stack = stack[:len(stack)-1]
		color[c.Name] = black
		order = append(order, c)
	}
	for _, c := range list {
		if color[c.Name] == white {
			visit(c)
		}
	}
	return order, cycles
}

// Condition is a compiled step `when:` expression over the parameters and
// `engine` (the engine kind of the run).
type Condition struct {
	prog    *vm.Program
	envType reflect.Type
	params  []Param
	Source  string
}

// CompileCondition compiles a boolean expression over parameters and
// `engine`.
func CompileCondition(params []Param, src string) (*Condition, *CompileError) {
	fs := append(paramFields(params), reflect.StructField{Name: "Engine", Type: reflect.TypeOf(""), Tag: `expr:"engine"`})
	t := reflect.StructOf(fs)
	p, err := expr.Compile(src, expr.Env(reflect.New(t).Elem().Interface()), expr.AsBool())
	if err != nil {
		ce := &CompileError{Def: "when", Field: FieldWhen, Msg: err.Error()}
		var fe *file.Error
		if errors.As(err, &fe) {
			ce.Line, ce.Column, ce.Msg = fe.Line, fe.Column, fe.Message
		}
		return nil, ce
	}
	return &Condition{prog: p, envType: t, params: params, Source: src}, nil
}

// Eval evaluates the condition with resolved parameter values.
func (c *Condition) Eval(params map[string]any, engine string) (bool, error) {
	env := reflect.New(c.envType).Elem()
	for i, p := range c.params {
		v := p.Value
		if o, ok := params[p.Name]; ok {
			v = o
		}
		if err := setField(env.Field(i), v); err != nil {
			return false, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	env.Field(len(c.params)).SetString(engine)
	return runBool(expr.Run, c.prog, env.Addr().Interface())
}

// tokenTimesWord finds token_times as a name of its own (not inside
// another, such as a check first_token_times_exact).
var tokenTimesWord = regexp.MustCompile(`\btoken_times\b`)

// ReadsTokenTimes reports whether a formula of the program may read the
// requests' token_times field: one that names it, or reads $env. A run
// loaded with its token times packed (archive.LoadDataPacked) must have
// them unpacked for such a program (record.Run.UnpackTokenTimes); the
// library's functions (itl, steady_state, …) read packed times
// themselves.
func (p *Program) ReadsTokenTimes() bool {
	if readsEnv(p.order) {
		return true
	}
	for _, c := range p.order {
		for _, f := range exprFields(c.Def) {
			if tokenTimesWord.MatchString(f.src) {
				return true
			}
		}
	}
	return false
}

// readsEnv reports whether a formula reads $env (or does not parse).
func readsEnv(list []*compiled) bool {
	for _, c := range list {
		for _, f := range exprFields(c.Def) {
			tree, err := parser.Parse(f.src)
			if err != nil {
				return true
			}
			u := newITLUses()
			ast.Walk(&tree.Node, u)
			if u.env {
				return true
			}
		}
	}
	return false
}
