package campaign

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/yamlstrict"
)

// Bounds on what a campaign file may ask for, checked before anything is
// expanded: a campaign file is small, but `repetitions: 1000000000` or a
// product of long axes would otherwise be expanded into memory (validate
// and sweep --dry-run died out of memory).
const (
	// MaxRuns bounds the matrix: every combination of the axes times the
	// repetitions, excluded ones included (expanding visits them all).
	// Each run is a whole benchmark of minutes: 10,000 is weeks of GPU
	// time, far past any one campaign.
	MaxRuns = 10_000
	// MaxExclusions bounds the exclude list (each combination is tested
	// against every exclusion).
	MaxExclusions = 1_000
	// MaxErrors is how many problems one load reports; the rest are
	// counted in one last line.
	MaxErrors = 50
	// maxListed is how many names an error lists (known axes, values).
	maxListed = 20
)

// errSink records a load's errors up to MaxErrors and counts the rest.
type errSink struct {
	d       *yamlstrict.Decoder
	omitted int
}

// full reports whether no more errors are recorded; a caller with costly
// arguments to format checks it first.
func (e *errSink) full() bool { return e.d.Len() >= MaxErrors }

func (e *errSink) omit(n int) { e.omitted += n }

// Errorf records an error at n, or counts it when MaxErrors are recorded.
func (e *errSink) Errorf(n *yaml.Node, where, format string, args ...any) {
	if e.full() {
		e.omitted++
		return
	}
	e.d.Errorf(n, where, format, args...)
}

// err is the decoder's errors, in file order, then the count of those
// left out.
func (e *errSink) err() error {
	err := e.d.Err()
	list, ok := err.(yamlstrict.ErrorList)
	if !ok {
		return err
	}
	if len(list) > MaxErrors {
		e.omitted += len(list) - MaxErrors
		list = list[:MaxErrors]
	}
	if e.omitted == 0 {
		return list
	}
	return append(list, &yamlstrict.Error{File: e.d.FileAt(nil), Msg: fmt.Sprintf("... and %d more errors", e.omitted)})
}

// someOf lists the first maxListed names.
func someOf(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d in all)", strings.Join(names[:maxListed], ", "), len(names))
}

// validateSize refuses a matrix of more than MaxRuns runs before it is
// expanded. The product is computed factor by factor and stops as soon as
// it passes the bound, so that it cannot overflow.
func (c *Campaign) validateSize(e *errSink, root *yaml.Node) {
	type factor struct {
		n    int
		name string
	}
	factors := []factor{
		{len(c.Matrix.Engine), "engines"}, {len(c.Matrix.Model), "models"},
		{len(c.Matrix.Scenario), "scenarios"}, {len(c.Matrix.Load), "loads"},
	}
	for _, k := range sortedKeys(c.Matrix.Set) {
		factors = append(factors, factor{len(c.Matrix.Set[k]), "values of " + k})
	}
	factors = append(factors, factor{c.Repetitions, "repetitions"})
	total := 1
	var parts []string
	over := false
	for _, f := range factors {
		if f.n <= 1 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", f.n, f.name))
		if total > MaxRuns/f.n {
			over = true
			continue
		}
		total *= f.n
	}
	if !over && total <= MaxRuns {
		return
	}
	n := yamlstrict.FirstNode(yamlstrict.NodeAt(root, "repetitions"), yamlstrict.NodeAt(root, "matrix"), root)
	where := "matrix"
	if c.Repetitions > 1 {
		where = "repetitions"
	}
	e.Errorf(n, where, "the campaign expands to more than %d runs (%s): split it into smaller campaigns", MaxRuns, strings.Join(parts, " × "))
}

// argList is one list of run flags of a campaign, at its path in the file.
type argList struct {
	path []string
	args []string
}

// where names the list in an error: args, matrix.engine[0].args, ...
func (l argList) where() string {
	if len(l.path) > 1 {
		return fmt.Sprintf("%s.%s[%s].args", l.path[0], l.path[1], l.path[2])
	}
	return "args"
}

// argLists are the campaign's lists of run flags: the top-level args and
// each matrix value's.
func (c *Campaign) argLists() []argList {
	lists := []argList{{[]string{"args"}, c.Args}}
	add := func(axis string, n int, args func(i int) []string) {
		for i := 0; i < n; i++ {
			lists = append(lists, argList{[]string{"matrix", axis, strconv.Itoa(i), "args"}, args(i)})
		}
	}
	add("engine", len(c.Matrix.Engine), func(i int) []string { return c.Matrix.Engine[i].Args })
	add("model", len(c.Matrix.Model), func(i int) []string { return c.Matrix.Model[i].Args })
	add("scenario", len(c.Matrix.Scenario), func(i int) []string { return c.Matrix.Scenario[i].Args })
	add("load", len(c.Matrix.Load), func(i int) []string { return c.Matrix.Load[i].Args })
	return lists
}

// validateArgs checks every list of run flags: --out is the sweep's to
// give (each run gets its own directory), and check (when set) parses the
// list as the run command would.
func (c *Campaign) validateArgs(e *errSink, root *yaml.Node, check func([]string) error) {
	for _, l := range c.argLists() {
		if len(l.args) == 0 || e.full() {
			continue
		}
		where := l.where()
		node := yamlstrict.NodeAt(root, l.path...)
		reserved := false
		for j, a := range l.args {
			if a == "--out" || strings.HasPrefix(a, "--out=") || a == "--sweep" || strings.HasPrefix(a, "--sweep=") {
				e.Errorf(yamlstrict.FirstNode(yamlstrict.NodeAt(node, strconv.Itoa(j)), node), fmt.Sprintf("%s[%d]", where, j),
					"%s is set by the sweep for each run (its archive goes to OUT/runs/<id>): remove it; the campaign's out: sets the directory", strings.SplitN(a, "=", 2)[0])
				reserved = true
			}
		}
		if check != nil && !reserved {
			if err := check(l.args); err != nil {
				e.Errorf(node, where, "%v", err)
			}
		}
	}
}
