package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/plot"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/report/htmlreport"
	"github.com/joulebench/joulebench/workflow"
)

// CheckFrontier checks the energy–latency frontier's options (--latency,
// --latency-max, --slo-attainment): invalid input when they cannot be used.
func CheckFrontier(fo compare.FrontierOptions) error {
	if err := compare.CheckLatency(fo.Latency); err != nil {
		return exitcode.Invalidf("--latency: %v", err)
	}
	if fo.LatencyMax < 0 || fo.Attainment < 0 || fo.Attainment > 1 {
		return exitcode.Invalidf("--latency-max must not be negative and --slo-attainment must be in [0, 1]")
	}
	if err := compare.CheckObjective(fo.Objective); err != nil {
		return exitcode.Invalidf("--objective: %v", err)
	}
	return nil
}

// CheckOutFormat accepts report's text formats and the page formats
// (html): report and compare make a page.
func CheckOutFormat(format string) error {
	if WantsPage(format) {
		return nil
	}
	if err := report.CheckFormat(format); err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("%w (or %s)", err, strings.Join(doc.Names(true), ", ")))
	}
	return nil
}

// WantsPage reports whether format renders a page (html): report then
// prepares each run's page.
func WantsPage(format string) bool {
	f, ok := doc.Lookup(format)
	return ok && f.Page
}

// EvaluateRuns finds the run directories among paths and evaluates each.
// A run some formulas failed on is kept (the values it lacks flag it),
// passed to warn (when set) and named in evalErr; an archive that cannot be
// read is an error naming it.
func (p Profiles) EvaluateRuns(ctx context.Context, paths []string, profile string, sets []string, warn func(dir string, evalErr error)) (runs []compare.Run, evalErr, err error) {
	dirs, err := compare.Discover(paths)
	if err != nil {
		return nil, nil, exitcode.With(exitcode.Invalid, err)
	}
	overrides, err := workflow.ParseSets(sets)
	if err != nil {
		return nil, nil, err
	}
	runs = make([]compare.Run, 0, len(dirs))
	var evalErrs []error
	for _, dir := range dirs {
		e, err := p.Evaluate(ctx, dir, profile, sets)
		if err != nil {
			return nil, nil, exitcode.Keep(err, "run %s", dir)
		}
		// The run is compared as evaluated: --set values (an SLO applied
		// to every run) stand in its parameters.
		e.Run.Meta.Parameters = withSets(e.Run.Meta.Parameters, overrides)
		if e.EvalErr != nil {
			if warn != nil {
				warn(dir, e.EvalErr)
			}
			evalErrs = append(evalErrs, NotEvaluated(dir, e.EvalErr))
		}
		runs = append(runs, compare.Run{Dir: dir, Meta: e.Run.Meta, Results: e.Results})
	}
	return runs, errors.Join(evalErrs...), nil
}

// Comparison is what compare renders: the report over the runs, and the
// formulas that failed on some of them.
type Comparison struct {
	Report  *compare.Report
	Runs    []compare.Run
	EvalErr error
	// Fit keeps the terminal rendering's tables and lines within the
	// terminal's width (120 columns off one): a sweep's comparison
	// unless --wide.
	Fit bool
}

// Compare evaluates the runs under paths and compares them with the
// comparison profile rules (a built-in's name or a file).
func (p Profiles) Compare(ctx context.Context, paths []string, profile, rules string, sets []string, fo compare.FrontierOptions, warn func(string, error), na ...compare.NotApplicable) (*Comparison, error) {
	prof, err := compare.ReadProfile(rules)
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("invalid comparison profile:\n%w", err))
	}
	if err := CheckFrontier(fo); err != nil {
		return nil, err
	}
	runs, evalErr, err := p.EvaluateRuns(ctx, paths, profile, sets, warn)
	if err != nil {
		return nil, err
	}
	return &Comparison{Report: prof.CompareWith(runs, fo, na...), Runs: runs, EvalErr: evalErr}, nil
}

// FrontierFigure is the figure of a comparison's energy–latency frontier:
// one series per configuration through its load points, and the latency
// bounds its points must meet on that axis (--latency-max, or the runs'
// SLO) as vertical lines.
func FrontierFigure(rep *compare.Report, latency string) *plot.Frontier {
	if latency == "" && len(rep.Frontier) > 0 {
		latency = rep.Frontier[0].LatencyMetric
	}
	if latency == "" {
		latency = compare.DefaultLatency
	}
	fig := &plot.Frontier{Latency: latency, Simulated: rep.Simulated, Basis: frontierBasis(rep.Frontier)}
	for _, g := range compare.FrontierGroups(rep.Frontier) {
		s := plot.FrontierSeries{Name: g[0].Model + " · " + g[0].Engine + " · " + g[0].Scenario}
		for _, c := range g[0].Configuration {
			s.Name += " · " + c.Value
		}
		for _, pt := range g {
			if pt.LatencyBound != nil && pt.LatencyMetric == latency && !slices.Contains(fig.Bounds, *pt.LatencyBound) {
				fig.Bounds = append(fig.Bounds, *pt.LatencyBound)
			}
			if pt.JPerToken == nil || pt.Latency == nil {
				continue
			}
			s.Points = append(s.Points, plot.FrontierPoint{Latency: *pt.Latency, JPerToken: *pt.JPerToken,
				Label: compare.LoadText(pt.Load), Pareto: pt.Pareto, Best: pt.LowestMeetingSLO})
		}
		if len(s.Points) > 0 {
			fig.Series = append(fig.Series, s)
		}
	}
	return fig
}

// frontierBasis names the basis of the J/token of every frontier point
// in words; "" when they differ.
func frontierBasis(points []compare.FrontierPoint) string {
	if len(points) == 0 {
		return ""
	}
	for _, pt := range points {
		if pt.Basis != points[0].Basis {
			return ""
		}
	}
	return compare.BasisShort(points[0].Basis)
}

// withSets is a copy of a run's parameters with the --set values in
// place of its own (a number as a number).
func withSets(params map[string]any, overrides map[string]string) map[string]any {
	if len(overrides) == 0 {
		return params
	}
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range overrides {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		} else {
			out[k] = v
		}
	}
	return out
}

// PlotData evaluates the run dir and prepares its figure; the --set values
// also set what the figure draws (window, cv_max, ...). EvalErr in the
// result says which formulas failed; err is invalid input.
func (p Profiles) PlotData(ctx context.Context, dir, profile string, sets []string) (*plot.Data, *Evaluated, error) {
	e, err := p.Evaluate(ctx, dir, profile, sets)
	if err != nil {
		return nil, nil, exitcode.Keep(err, "run %s", dir)
	}
	overrides, err := workflow.ParseSets(sets)
	if err != nil {
		return nil, e, err
	}
	e.Run.Meta.Parameters = withSets(e.Run.Meta.Parameters, overrides)
	data, err := plot.Prepare(e.Run, e.Results)
	if err != nil {
		return nil, e, exitcode.With(exitcode.Invalid, err)
	}
	return data, e, nil
}

// Reports are what report renders: each run, its energy by stage, and
// (html) its page's input; EvalErr joins the formulas that failed, and
// Incomplete (exit code Checks) names the runs that did not finish.
type Reports struct {
	Runs   []report.Run
	Stages []report.StageBreakdown
	// Hosts is each run's energy by host (nil for a run on one host
	// without roles).
	Hosts      []*report.HostBreakdown
	Pages      []htmlreport.RunInput
	EvalErr    error
	Incomplete error
}

// Report evaluates each run directory for report (with its pages when
// html).
func (p Profiles) Report(ctx context.Context, dirs []string, profile string, html bool) (*Reports, error) {
	var out Reports
	var evalErrs, incomplete []error
	for _, dir := range dirs {
		e, err := p.Evaluate(ctx, dir, profile, nil)
		if err != nil {
			return nil, err
		}
		if e.EvalErr != nil {
			evalErrs = append(evalErrs, NotEvaluated(dir, e.EvalErr))
		}
		if why := Incomplete(e.Run); why != "" {
			incomplete = append(incomplete, fmt.Errorf("%s: incomplete run: %s", dir, why))
		}
		out.Runs = append(out.Runs, report.Run{Meta: e.Run.Meta, Results: e.Results})
		st := report.Stages(e.Run, e.Results, e.Loaded.Profile.StageEnergy)
		out.Stages = append(out.Stages, st)
		hosts := report.Hosts(e.Run, e.Results)
		out.Hosts = append(out.Hosts, hosts)
		if html {
			out.Pages = append(out.Pages, htmlreport.RunInput{Run: e.Run, Results: e.Results, Stages: &st, Hosts: hosts, Params: e.Loaded.Profile.Parameters,
				ParamsFrom: e.Params.String(), EvalErr: e.EvalErr})
		}
	}
	out.EvalErr = errors.Join(evalErrs...)
	if len(incomplete) > 0 {
		out.Incomplete = exitcode.With(exitcode.Checks, errors.Join(incomplete...))
	}
	return &out, nil
}

// Outcome is report's exit status, as analyze's for each run: Eval when a
// formula could not be evaluated on some run, else Checks when a check of
// severity fail or exclude did not pass on some run, else nil.
func (r *Reports) Outcome() error {
	if r.EvalErr != nil {
		return exitcode.With(exitcode.Eval, r.EvalErr)
	}
	if r.Incomplete != nil {
		return r.Incomplete
	}
	var failed []error
	for _, run := range r.Runs {
		if run.Results == nil {
			continue
		}
		if err := ChecksOutcome(run.Results); err != nil {
			failed = append(failed, fmt.Errorf("run %s: %w", run.Meta.RunID, err))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return exitcode.With(exitcode.Checks, errors.Join(failed...))
}

// Render writes the comparison in format: compare's document, whose page
// (html) is one self-contained page (version in its footer).
func (c *Comparison) Render(w io.Writer, format, version string) error {
	d := compare.Doc(c.Report)
	d.Fit, d.FitTables = c.Fit, c.Fit
	d.Page = func(w io.Writer) error {
		return htmlreport.WriteCompare(w, c.Report, c.Runs, htmlreport.Options{Version: version})
	}
	return doc.Render(w, d, format)
}

// Render writes the runs in format: side by side, their energy by stage
// and, for a run over several hosts or with roles, by host; the page (html) is one self-contained page with a section per run
// (version in its footer).
func (r *Reports) Render(w io.Writer, format, version string) error {
	d, err := report.RunsReportDoc(r.Runs, r.Stages, r.Hosts)
	if err != nil {
		return err
	}
	d.Page = func(w io.Writer) error { return htmlreport.WriteRun(w, r.Pages, htmlreport.Options{Version: version}) }
	return doc.Render(w, d, format)
}
