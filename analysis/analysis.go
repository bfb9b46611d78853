// Package analysis loads profiles by name and evaluates archived runs with
// them: what analyze, report, compare, estimate, plot and validate share,
// and how run and analyze show a run's results (View, ShowResults, Gate).
// A run is always evaluated again from its raw data, with its own archived
// profile (checked against run.json's sha256) unless another is named.
// Errors carry their exit code (internal/exitcode): invalid input, a
// formula that could not be evaluated, a failed check.
package analysis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// Profiles finds profiles by name (Finder) and loads them with the step
// kinds a run has. LimitMemory, when set, is called once an archive's data
// is loaded and indexed and before it is evaluated; the function it
// returns is called after. Setting it also has the archive loaded at a
// lower GOGC (limitLoadMemory).
type Profiles struct {
	Finder      *profiles.Finder
	LimitMemory func() (restore func())
}

// Read resolves a profile argument (a file, or a name the finder knows) to
// its YAML and the name errors report it by.
func (p Profiles) Read(ref string) ([]byte, string, error) {
	return p.finder().Find(ref, "")
}

func (p Profiles) finder() *profiles.Finder {
	if p.Finder == nil {
		return &profiles.Finder{}
	}
	return p.Finder
}

// Load loads a profile with --set values; its errors are invalid input.
func (p Profiles) Load(src []byte, name string, sets []string) (*workflow.Loaded, error) {
	overrides, err := workflow.ParseSets(sets)
	if err != nil {
		return nil, err
	}
	l, err := workflow.Load(src, name, workflow.Options{Registry: steps.Registry(), Overrides: overrides, Lookup: p.finder().Find})
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("invalid profile:\n%w", err))
	}
	return l, nil
}

// ReadLoad reads the profile ref names and loads it with sets; a profile
// that cannot be found is invalid input.
func (p Profiles) ReadLoad(ref string, sets []string) (*workflow.Loaded, string, error) {
	src, name, err := p.Read(ref)
	if err != nil {
		return nil, "", exitcode.With(exitcode.Invalid, err)
	}
	l, err := p.Load(src, name, sets)
	return l, name, err
}

// Evaluated is an archived run evaluated with a profile. EvalErr joins the
// formulas that failed on this run's data (the others have values).
type Evaluated struct {
	Run     *record.Run
	Loaded  *workflow.Loaded
	Results *record.Results
	EvalErr error
	// Params says where each of the profile's parameters came from
	// (ParamOrigins).
	Params ParamOrigins
}

// Evaluate loads the run archive dir and evaluates a profile over it: the
// named profile, or ("") the run's own archived profile. Either way the
// parameters the run was archived with (run.json) stand: a parameter the
// profile has and run.json lacks takes the profile's default, one of
// run.json the named profile does not declare is left out (Params.Ignored
// names it), and sets apply on top. An error is a failure to load or start
// (invalid input); formulas that fail on the data are EvalErr.
func (p Profiles) Evaluate(ctx context.Context, dir, profile string, sets []string) (*Evaluated, error) {
	return p.evaluate(ctx, dir, profile, sets, false)
}

// evaluate is Evaluate; with dropPower, the run's power rows are freed
// once evaluation has indexed them (its per-device series), and the
// Evaluated run has none: for a caller that shows the results only
// (ShowRun), not for one that plots, reports or evaluates the run again.
// At a million requests over 10 h of 8 GPUs the rows are 160 MB of what
// evaluation would otherwise hold (issue 46).
func (p Profiles) evaluate(ctx context.Context, dir, profile string, sets []string, dropPower bool) (*Evaluated, error) {
	// results.json is not read: everything is evaluated again from the
	// raw data, so a broken or edited results.json changes nothing.
	// Token times are packed as they are read (most of a long run's
	// memory: issue 46), and unpacked below for a profile whose formulas
	// read them.
	restoreGC := func() {}
	if p.LimitMemory != nil {
		restoreGC = limitLoadMemory()
	}
	run, err := archive.LoadDataPacked(dir)
	defer restoreGC() // at the latest; else just after evaluation
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, err)
	}
	var l *workflow.Loaded
	var src []byte
	var name string
	var ignored []string
	if profile != "" {
		src, name, err = p.Read(profile)
		if err == nil {
			l, ignored, err = p.loadOther(src, name, run.Meta, sets)
		}
	} else {
		src, name, err = ArchivedProfile(dir, run.Meta)
		if err == nil {
			l, err = p.loadArchived(src, name, run.Meta, sets)
		}
	}
	if err != nil {
		var c exitcode.Coder
		if errors.As(err, &c) {
			return nil, err
		}
		return nil, exitcode.With(exitcode.Invalid, err)
	}
	// A run killed or interrupted during a stage has it open: it is
	// evaluated up to the end of its data, and the values over it say they
	// are partial.
	run.ClampOpenStages()
	if l.Program.ReadsTokenTimes() {
		run.UnpackTokenTimes()
		if err := run.TimesErr(); err != nil {
			return nil, fmt.Errorf("%s: %w", run.Dir, err)
		}
		_ = run.CloseTimes() // every time now held: the file is no longer read
	}
	zero := ZeroPowerDomains(run)
	data, err := metricdefs.NewData(run)
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("%s: %w", run.Dir, err))
	}
	if dropPower {
		run.Power = nil
	}
	// The evaluation's memory limit is measured on what it holds: the
	// run indexed, without the power rows it frees. GOGC stays at
	// loadGCPercent through the evaluation: what it builds (the shapes,
	// attribution's pieces) is more than the run now holds, its token
	// times in a temporary file (issue 46).
	restore := func() {}
	if p.LimitMemory != nil {
		restore = p.LimitMemory()
	}
	res, evalErr := workflow.EvaluateData(ctx, l, data)
	restore()
	restoreGC()
	if err := run.TimesErr(); err != nil {
		// A token time not read back is NaN: no figure is to be trusted.
		return nil, fmt.Errorf("%s: %w", run.Dir, err)
	}
	if res == nil {
		return nil, exitcode.With(exitcode.Invalid, evalErr)
	}
	if why := Incomplete(run); why != "" {
		MarkIncomplete(res, why)
	}
	if err := MarkNoReading(res, zero); err != nil {
		evalErr = errors.Join(evalErr, err)
	}
	if profile != "" {
		// Label headers and CSV with the profile evaluated, not the one
		// the run was archived with.
		run.Meta.Profile = l.Ref
	}
	return &Evaluated{Run: run, Loaded: l, Results: res, EvalErr: evalErr, Params: paramOrigins(l, run.Meta, sets, ignored)}, nil
}

// NotEvaluated is the error that names the run dir whose formulas in
// evalErr could not be evaluated (without an exit code: the caller says
// whether the command fails on it).
func NotEvaluated(dir string, evalErr error) error {
	return fmt.Errorf("some formulas could not be evaluated on %s:\n%w", dir, evalErr)
}

// ChecksOutcome is an error (exit code Checks) when a check of severity
// fail or exclude did not pass.
func ChecksOutcome(res *record.Results) error {
	var failed []error
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind == "check" && r.Passed != nil && !*r.Passed && (r.Severity == "fail" || r.Severity == "exclude") {
			failed = append(failed, fmt.Errorf("check %s (%s) failed: %s", n, r.Severity, r.Message))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return exitcode.With(exitcode.Checks, errors.Join(failed...))
}

// CheckRunFinished is the check every evaluation of an unfinished run
// fails (severity exclude): its figures never pass as a finished run's.
const CheckRunFinished = "run_finished"

// Incomplete says why run did not finish ("" when it did): its status
// is running (killed: kill -9, power loss) or interrupted, a stage has
// no end, or it holds fewer formal requests than request_set.count.
func Incomplete(run *record.Run) string {
	m := &run.Meta
	var why []string
	switch m.Status {
	case record.StatusRunning:
		why = append(why, "status running: joulebench stopped without writing a final status (killed, or still in progress)")
	case record.StatusInterrupted:
		why = append(why, "status interrupted")
	}
	var open []string
	for _, s := range m.Stages {
		if s.Open {
			open = append(open, s.Name)
		}
	}
	if len(open) > 0 {
		why = append(why, "stage "+strings.Join(open, ", ")+" never ended")
	}
	formal := 0
	for i := range run.Requests {
		if run.Requests[i].Phase == "formal" {
			formal++
		}
	}
	if formal < m.RequestSet.Count {
		why = append(why, fmt.Sprintf("%d of %d formal requests recorded", formal, m.RequestSet.Count))
	}
	return strings.Join(why, "; ")
}

// MarkIncomplete marks the results of an unfinished run as such: the check
// CheckRunFinished fails (severity exclude, so the command exits 3), the
// run is excluded with the reason, and every metric's note says
// "incomplete run", so that no output shows a figure of it as a finished
// run's.
func MarkIncomplete(res *record.Results, why string) {
	msg := "incomplete run: " + why
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind != "metric" {
			continue
		}
		if r.Note == "" {
			r.Note = "incomplete run"
		} else {
			r.Note += "; incomplete run"
		}
		res.Values[n] = r
	}
	failed := false
	res.Values[CheckRunFinished] = record.Result{Kind: "check", Value: false, Severity: "exclude", Passed: &failed,
		Description: "the run finished: status complete, every stage ended, every formal request recorded", Message: msg}
	res.Order = append([]string{CheckRunFinished}, slices.DeleteFunc(res.Order, func(n string) bool { return n == CheckRunFinished })...)
	if res.Excluded {
		res.ExcludeReason = msg + "; " + res.ExcludeReason
	} else {
		res.Excluded, res.ExcludeReason = true, msg
	}
}

// ZeroPowerDomains lists the domains whose every power sample reads 0 W,
// with an energy counter, when there is one, that never moves, over the
// whole run or over its formal stage (under load no device draws nothing):
// their source gave no reading (a failed sensor, a zeroed file), which is
// not a reading of zero. An idle stage alone may read 0 W (a GPU's idle
// power on some Macs rounds to 0 mW) and is not enough.
func ZeroPowerDomains(run *record.Run) []string {
	domain := map[string]string{}
	for _, d := range run.Meta.Hardware.Devices {
		domain[d.ID] = d.DomainOrGPU()
	}
	formal, hasFormal := run.Meta.StageByName("formal")
	var all, inFormal zeroScan
	for _, p := range run.Power {
		dom, ok := domain[p.Device]
		if !ok {
			dom = record.DomainGPU
		}
		all.add(dom, &p)
		if hasFormal && p.T >= formal.Start && p.T <= formal.End {
			inFormal.add(dom, &p)
		}
	}
	var out []string
	for _, d := range record.Domains {
		if all.zero(d) || inFormal.zero(d) {
			out = append(out, d)
		}
	}
	return out
}

// zeroScan finds, per domain, whether any sample read power or counted
// energy.
type zeroScan struct {
	seen, moved map[string]bool
	firstJ      map[string]float64 // by device
}

func (z *zeroScan) add(dom string, p *record.PowerSample) {
	if z.seen == nil {
		z.seen, z.moved, z.firstJ = map[string]bool{}, map[string]bool{}, map[string]float64{}
	}
	z.seen[dom] = true
	if p.PowerW != 0 {
		z.moved[dom] = true
	}
	if p.HasEnergy {
		if j, ok := z.firstJ[p.Device]; !ok {
			z.firstJ[p.Device] = p.EnergyJ
		} else if j != p.EnergyJ {
			z.moved[dom] = true
		}
	}
}

// zero: the domain has samples and none read anything.
func (z *zeroScan) zero(dom string) bool { return z.seen[dom] && !z.moved[dom] }

// MarkNoReading makes every metric over the power of domains (its
// boundary names one of them) not applicable, with the reason, and
// returns an error naming them (nil when there are none): a figure
// computed from no reading is never printed as 0 W or 0 J/token.
func MarkNoReading(res *record.Results, domains []string) error {
	if len(domains) == 0 {
		return nil
	}
	why := "every power reading of the " + strings.Join(domains, ", ") + " devices (in the run or its formal stage) is 0 W with no energy counted: the source gave no reading, which is not a reading of zero"
	var names []string
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind != "metric" || r.Boundary == "" || r.Value == nil {
			continue
		}
		hit := false
		for _, b := range strings.Split(r.Boundary, "+") {
			hit = hit || slices.Contains(domains, b)
		}
		if !hit {
			continue
		}
		r.Value, r.Note = nil, "not applicable: "+why
		res.Values[n] = r
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%s (%s)", why, strings.Join(names, ", "))
}
