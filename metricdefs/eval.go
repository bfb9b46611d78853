package metricdefs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// maxListInResults is the longest list results.json stores
// (record.MaxListItems): a longer list of anything but numbers is
// summarised by its length already in the results Evaluate returns.
const maxListInResults = record.MaxListItems

// maxNumbersInMemory is the longest list of numbers a definition's value
// keeps whole in the results Evaluate returns (topValue): a long run's
// steady windows (steady_window_j_per_token), which compare's batch
// means read from them. 16,384 boxed numbers are about 400 KB a list;
// the archive's writer summarises any list over maxListInResults in
// results.json.
const maxNumbersInMemory = 1 << 14

// Evaluate computes every derived value, metric and check of the program over
// one run. params are the resolved parameter values by name (missing ones
// keep the values the program was compiled with). Every definition is
// attempted; the returned error joins the failures, each naming its
// definition, and the results still hold everything that could be computed.
func (p *Program) Evaluate(ctx context.Context, data *Data, params map[string]any) (*record.Results, error) {
	env := reflect.New(p.runType).Elem()
	env.Field(p.fields["ctx"]).Set(reflect.ValueOf(withData(ctx, data)))
	env.Field(p.fields["run"]).Set(reflect.ValueOf(data.Run))
	env.Field(p.fields["stages"]).Set(reflect.ValueOf(data.Stages))
	env.Field(p.fields["events"]).Set(reflect.ValueOf(data.Events))
	env.Field(p.fields["requests"]).Set(reflect.ValueOf(data.Requests))
	env.Field(p.fields["devices"]).Set(reflect.ValueOf(data.Devices))
	if p.baseline {
		p.setBaseline(env, data.Baseline)
	}
	var errs []error
	for _, prm := range exprParams(p.params, p.baseline) {
		v := prm.Value
		if o, ok := params[prm.Name]; ok {
			v = o
		}
		if err := setField(env.Field(p.fields[prm.Name]), v); err != nil {
			errs = append(errs, fmt.Errorf("parameter %s: %w", prm.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	res := &record.Results{
		FormatVersion: record.FormatVersion,
		RunID:         data.Meta.RunID,
		Simulated:     data.Meta.Simulated,
		Values:        map[string]record.Result{},
	}
	envI := env.Addr().Interface()
	outs := make([]defOutcome, len(p.order))
	pos := make(map[string]int, len(p.order))
	for i, c := range p.order {
		pos[c.Name] = i
	}
	machines := newVMs(data)
	evalAt := func(i int) {
		outs[i] = p.evalDef(p.order[i], env, envI, data, machines.run, func(dep string) *defOutcome { return &outs[pos[dep]] })
	}
	if p.concurrent {
		evalConcurrently(p.order, pos, evalAt, evalParallel(len(data.Requests), runtime.GOMAXPROCS(0)))
	} else {
		for i := range p.order {
			evalAt(i)
		}
	}
	for i, c := range p.order {
		o := &outs[i]
		if o.err != nil {
			errs = append(errs, o.err)
		}
		r := o.r
		if c.Kind == KindCheck && r.Passed != nil && !*r.Passed && c.Severity == SeverityExclude && !res.Excluded {
			res.Excluded = true
			res.ExcludeReason = fmt.Sprintf("check %s failed", c.Name)
			if r.Message != "" {
				res.ExcludeReason += ": " + r.Message
			}
		}
		res.Order = append(res.Order, c.Name)
		res.Values[c.Name] = r
	}
	markPartial(p.order, data, res)
	return res, errors.Join(errs...)
}

// evalConcurrently evaluates the definitions (by their index in order) as
// their dependencies allow, up to parallel at a time. A definition
// reads only its dependencies' values (Compile finds them all, and makes
// the program sequential when a formula reads $env), each written before
// its done channel is closed.
func evalConcurrently(order []*compiled, pos map[string]int, evalAt func(int), parallel int) {
	done := make([]chan struct{}, len(order))
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, max(1, parallel))
	var wg sync.WaitGroup
	for i, c := range order {
		wg.Go(func() {
			defer close(done[i])
			for _, d := range c.deps {
				<-done[pos[d]]
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			evalAt(i)
		})
	}
	wg.Wait()
}

// How many definitions are evaluated at once: one a core, except on a
// large run, where each formula running over the requests holds lists as
// long as the run (a VM's stack of a value a request, the list it
// builds, a boxed number each: about 40 bytes a request) until it ends,
// so that the peak memory grew with the machine's cores. analyze of a
// million requests (issue 46): peak RSS 892 MiB at 2 at a time, 904 at
// 4, 975 at 8; the heavy passes inside a formula (token shapes,
// attribution, ITL) still use every core.
const (
	largeRunRequests = 1 << 16
	largeRunParallel = 2
)

// evalParallel is how many definitions are evaluated at once over a run
// of requests on procs cores.
func evalParallel(requests, procs int) int {
	if requests >= largeRunRequests {
		return min(procs, largeRunParallel)
	}
	return procs
}

// defOutcome is what evaluating one definition gave: its result, the error
// to report (nil if none), and for its dependents why it has no value
// (failed, "" when it has one; na when not applicable rather than an error).
type defOutcome struct {
	r      record.Result
	err    error
	failed string
	na     bool
	done   bool // failed is set (an outcome of "" may still be a failure, see evalDef)
}

// vms lends expression VMs to the goroutines of one evaluation. A VM
// used again keeps the stack it grew: a map over 100,000 requests pushes
// every result before it collects them into a list, and a new VM would
// grow its stack (and copy it) again for every such formula. A VM about
// to run a formula with a loop (map, filter, sum, …) over a large run is
// given a stack of stack values first, if it has less room: grown by
// append, a large stack is copied some ten times on its way (each time a
// quarter longer), five times its final size allocated in all. A VM that
// runs no loop keeps its small stack.
type vms struct {
	pool     sync.Pool
	stack    int
	budget   uint // each run's memory budget (memoryBudget); 0: expr's default
	requests int  // the run's requests, that the budget is for
}

// budgetPerRequest is how many list elements a formula may allocate per
// request of the run, above expr's own budget (conf.DefaultMemoryBudget,
// 1e6): room for a formula that filters, maps and sorts the requests a
// few times over (each list as long as the requests counts its length),
// while a runaway formula (a range of 1e12, a list squared) is still
// stopped.
const budgetPerRequest = 16

// memoryBudget is the memory budget of a formula on a run of n requests:
// expr counts the elements of every list, map and range a formula makes
// and stops it at the budget, which at expr's default (1e6) a single
// filter over a million requests reaches.
func memoryBudget(n int) uint {
	return conf.DefaultMemoryBudget + budgetPerRequest*uint(n)
}

// budgetError explains a formula stopped by its memory budget: what the
// budget is and what to change.
func (m *vms) budgetError(err error) error {
	if err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
		return err
	}
	return fmt.Errorf("%w\n(the memory budget of a formula is %d list elements: %d, expr's own, plus %d for each of the run's %d requests; make fewer or shorter lists, e.g. count or sum with a predicate instead of filter then len, or reduce a list before it is mapped)",
		err, m.budget, conf.DefaultMemoryBudget, budgetPerRequest, m.requests)
}

// newVMs lends VMs that size their stacks, for a loop, for a list as
// long as the run's requests (and a few more values): the longest lists
// formulas make are those of map and filter over the requests.
func newVMs(data *Data) *vms {
	m := &vms{budget: memoryBudget(len(data.Requests)), requests: len(data.Requests)}
	if n := len(data.Requests); n >= minVMStack {
		m.stack = n + 16
	}
	return m
}

// minVMStack is the fewest requests for which a VM's stack is sized
// beforehand; below it, growing it costs nothing worth saving.
const minVMStack = 1 << 10

// run is expr.Run(prog, env) on a lent VM.
func (m *vms) run(prog *vm.Program, env any) (any, error) {
	v, _ := m.pool.Get().(*vm.VM)
	if v == nil {
		v = &vm.VM{}
	}
	if cap(v.Stack) < m.stack && slices.Contains(prog.Bytecode, vm.OpBegin) {
		v.Stack = make([]any, 0, m.stack)
	}
	v.MemoryBudget = m.budget
	out, err := v.Run(prog, env)
	err = m.budgetError(err)
	clear(v.Stack[:cap(v.Stack)]) // what it popped is not kept alive by it
	m.pool.Put(v)
	return out, err
}

// evalDef evaluates one definition whose dependencies are evaluated (dep
// returns their outcomes) and stores its value in env; run runs its
// formulas.
func (p *Program) evalDef(c *compiled, env reflect.Value, envI any, data *Data, run func(*vm.Program, any) (any, error), dep func(string) *defOutcome) defOutcome {
	r := record.Result{Kind: string(c.Kind), Label: c.Label, Unit: c.Unit, Description: c.Description, Format: c.Format, Boundary: c.Boundary}
	if c.Kind == KindCheck {
		r.Severity = c.Severity
		r.Invalidates = c.Invalidates
	}
	fail := func(err error, note string, na bool) defOutcome {
		r.Note = note
		return defOutcome{r: r, err: err, failed: note, na: na, done: true}
	}
	for _, d := range c.deps {
		o := dep(d)
		if !o.done {
			continue
		}
		if o.na {
			return fail(nil, o.failed, true) // the dependency's own "not applicable: …" reason
		}
		return fail(fmt.Errorf("%s %s: depends on %s, which failed: %s", c.Kind, c.Name, d, o.failed), "error: depends on "+d, false)
	}
	if why := baselineNA(c, data.Baseline); p.baseline && why != "" {
		return fail(nil, why, true)
	}
	if c.when != nil {
		ok, err := runBool(run, c.when, envI)
		if err != nil {
			return fail(fmt.Errorf("%s %s: when: %w", c.Kind, c.Name, err), "error: "+err.Error(), false)
		}
		if !ok {
			note := "not applicable"
			if c.NA != "" {
				note = "not applicable: " + c.NA
			}
			return fail(nil, note, true)
		}
	}
	out, err := run(c.prog, envI)
	if err != nil {
		err = missingStage(c.Expr, data, err)
	}
	if err == nil {
		err = checkFiniteResult(out)
	}
	if err == nil && out == nil && c.Kind == KindMetric {
		err = fmt.Errorf("result is nil (a missing stage, event or map key?): guard it with a when: condition")
	}
	if err == nil {
		err = setField(env.Field(c.field), c.held(out))
	}
	if err != nil {
		return fail(fmt.Errorf("%s %s: %w", c.Kind, c.Name, err), "error: "+err.Error(), false)
	}
	switch c.Kind {
	case KindCheck:
		passed, ok := out.(bool)
		if !ok {
			return defOutcome{r: r, err: fmt.Errorf("check %s: result is %T, not a boolean", c.Name, out), failed: "error", done: true}
		}
		r.Value = passed
		r.Passed = &passed
		if !passed {
			r.Message = failedMessage(c, envI, run)
		}
	default:
		r.Value, r.Note = topValue(out)
		if c.detail != nil && r.Value != nil && r.Note == "" {
			// A metric's detail: its inputs, as the note beside it.
			if d, err := run(c.detail, envI); err == nil && d != nil {
				r.Note = fmt.Sprint(d)
			}
		}
	}
	return defOutcome{r: r}
}

// failedMessage is a failed check's message: its message, then what its
// detail formula gives (nothing when that fails or is empty).
func failedMessage(c *compiled, envI any, run func(*vm.Program, any) (any, error)) string {
	msg := c.Message
	if c.detail == nil {
		return msg
	}
	d, err := run(c.detail, envI)
	if err != nil || d == nil || fmt.Sprint(d) == "" {
		return msg
	}
	if msg != "" {
		msg += ": "
	}
	return msg + fmt.Sprint(d)
}

// stageRef finds `stages.NAME`, `stages?.NAME` and `stages["NAME"]`.
var stageRef = regexp.MustCompile(`\bstages\s*(?:\??\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*"([^"]+)"\s*\])`)

// stagesIn returns the stage names a formula refers to.
func stagesIn(src string) []string {
	var out []string
	for _, m := range stageRef.FindAllStringSubmatch(src, -1) {
		if m[1] != "" {
			out = append(out, m[1])
		} else {
			out = append(out, m[2])
		}
	}
	return out
}

// missingStage turns the error of a formula that reads a stage the run does
// not have (expr reports a nil dereference) into one naming the stage.
func missingStage(src string, data *Data, err error) error {
	var missing []string
	for _, n := range stagesIn(src) {
		if _, ok := data.Stages[n]; !ok && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return err
	}
	have := make([]string, 0, len(data.Stages))
	for n := range data.Stages {
		have = append(have, n)
	}
	sort.Strings(have)
	return fmt.Errorf("this run has no stage %s (it has: %s); a formula can test for it with %q in stages",
		strings.Join(missing, ", "), strings.Join(have, ", "), missing[0])
}

// markPartial notes every value that reads an open stage (the run stopped
// during it; its end was clamped to the data), directly or through the
// values it depends on.
func markPartial(order []*compiled, data *Data, res *record.Results) {
	if len(data.Open) == 0 {
		return
	}
	partial := map[string]string{} // name → the open stages it reads
	for _, c := range order {
		var open []string
		for _, n := range stagesIn(c.Expr) {
			if data.Open[n] && !slices.Contains(open, n) {
				open = append(open, n)
			}
		}
		for _, dep := range c.deps {
			if why, ok := partial[dep]; ok {
				for _, n := range strings.Split(why, ", ") {
					if !slices.Contains(open, n) {
						open = append(open, n)
					}
				}
			}
		}
		if len(open) == 0 {
			continue
		}
		sort.Strings(open)
		partial[c.Name] = strings.Join(open, ", ")
		r, ok := res.Values[c.Name]
		if !ok {
			continue
		}
		note := "partial: stage " + partial[c.Name] + " had not ended when the run stopped (clamped to the end of its data)"
		if r.Note != "" {
			note = r.Note + "; " + note
		}
		r.Note = note
		res.Values[c.Name] = r
	}
}

// runBool runs a formula of a boolean with run (expr.Run or vms.run).
func runBool(run func(*vm.Program, any) (any, error), p *vm.Program, env any) (bool, error) {
	out, err := run(p, env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("result is %T, not a boolean", out)
	}
	return b, nil
}

// checkFiniteResult rejects NaN and ±Inf anywhere a formula produced a number.
func checkFiniteResult(v any) error {
	if f, ok := toFloat(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return fmt.Errorf("result is %v (a division by zero or an empty set?)", f)
	}
	return nil
}

// setField stores a value into an environment field, converting numbers
// when the runtime type differs from the compiled one (e.g. an int where a
// float was declared).
func setField(f reflect.Value, v any) error {
	if v == nil {
		f.Set(reflect.Zero(f.Type()))
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Type().AssignableTo(f.Type()) {
		f.Set(rv)
		return nil
	}
	if rv.Type().ConvertibleTo(f.Type()) && isNumber(rv.Kind()) && isNumber(f.Kind()) {
		f.Set(rv.Convert(f.Type()))
		return nil
	}
	return fmt.Errorf("value of type %s where %s was expected", rv.Type(), f.Type())
}

func isNumber(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// topValue is resultValue of a definition's value, except that a list
// of numbers longer than maxListInResults is kept whole, up to
// maxNumbersInMemory items (compare reads a long run's every steady
// window); results.json still summarises it (record.MaxListItems).
func topValue(v any) (any, string) {
	if l, ok := v.(*measure.ITLValues); ok && l.Len() > maxListInResults && l.Len() <= maxNumbersInMemory {
		v = l.Slice()
	}
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array || rv.Len() <= maxListInResults ||
		rv.Len() > maxNumbersInMemory || !numberList(rv) {
		return resultValue(v)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i], _ = resultValue(rv.Index(i).Interface())
	}
	return out, ""
}

// numberList reports whether every item of the list rv is a number.
func numberList(rv reflect.Value) bool {
	if isNumber(rv.Type().Elem().Kind()) {
		return true
	}
	for i := range rv.Len() {
		e := rv.Index(i)
		if e.Kind() == reflect.Interface {
			e = e.Elem()
		}
		if !e.IsValid() || !isNumber(e.Kind()) {
			return false
		}
	}
	return true
}

// resultValue turns an expression result into something results.json can
// hold: scalars as they are, structs as objects keyed by their expression
// names, short lists as lists, long lists by their length.
func resultValue(v any) (any, string) {
	if v == nil {
		return nil, ""
	}
	if l, ok := v.(*measure.ITLValues); ok { // the list it stands for
		if l.Len() > maxListInResults {
			return nil, fmt.Sprintf("list of %d items (not stored)", l.Len())
		}
		return resultValue(l.Slice())
	}
	if r, ok := v.(record.Request); ok && r.TokenTimesPacked() {
		r.UnpackTokenTimes() // a copy's: written as read
		v = r
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool, reflect.String:
		return v, ""
	case reflect.Float32, reflect.Float64:
		return rv.Float(), ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), ""
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), ""
	case reflect.Slice, reflect.Array:
		if rv.Len() > maxListInResults {
			return nil, fmt.Sprintf("list of %d items (not stored)", rv.Len())
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i], _ = resultValue(rv.Index(i).Interface())
		}
		return out, ""
	case reflect.Map:
		out := map[string]any{}
		iter := rv.MapRange()
		for iter.Next() {
			out[fmt.Sprint(iter.Key().Interface())], _ = resultValue(iter.Value().Interface())
		}
		return out, ""
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, ""
		}
		return resultValue(rv.Elem().Interface())
	case reflect.Struct:
		out := map[string]any{}
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Tag.Get("expr")
			if name == "" {
				name = f.Name
			}
			val, note := resultValue(rv.Field(i).Interface())
			if note != "" {
				val = note
			}
			out[name] = val
		}
		return out, ""
	}
	return fmt.Sprint(v), ""
}
