package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// A parameter sweep (`run PROFILE --sweep NAME[=v1,v2,...]`) runs the
// profile once per value of its parameter NAME (as --set NAME=v), against
// each engine given, each run in its own archive under one directory, with
// the cooldown between runs, then prints one row per value and engine.
// Without values, the profile's own list is used: its string parameter
// sweep_NAME (comma-separated). The columns are the metrics named in the
// profile's sweep_columns parameter. The sweeps are data: the asiai
// profile declares context_tokens (prompts filled to N tokens) and burst
// (N requests in flight).

// SweepRow is one run of a sweep.
type SweepRow struct {
	Value, Engine, Dir string
}

// Sweep is a finished sweep: the parameter, the columns of its table (the
// profile's sweep_columns) and one row per value and engine.
type Sweep struct {
	Name    string
	Columns []string
	Rows    []SweepRow
}

// sweepValues resolves --sweep: the parameter's name and its values.
func sweepValues(spec string, params map[string]any) (string, []string, error) {
	name, list, given := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if _, ok := params[name]; !ok {
		return "", nil, Invalidf("--sweep %s: the profile has no parameter %q", spec, name)
	}
	if !given {
		l, ok := params["sweep_"+name].(string)
		if !ok || strings.TrimSpace(l) == "" {
			return "", nil, Invalidf("--sweep %s: give the values (--sweep %s=v1,v2) or declare the string parameter sweep_%s in the profile", spec, name, name)
		}
		list = l
	}
	var vals []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return "", nil, Invalidf("--sweep %s: no values", spec)
	}
	return name, vals, nil
}

// runSweep runs the sweep the spec asks for.
func (r *Runner) runSweep(ctx context.Context, sets []string) (*Result, error) {
	s := r.s
	kinds := s.Engines
	if len(kinds) == 0 {
		kinds = []string{""}
	}
	if len(kinds) > 1 && s.Engine.URL != "" {
		return nil, Invalidf("--engine-url benchmarks one server: give one --engine with it")
	}
	if err := report.CheckFormat(s.Format); err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	defer func() { r.engine = "" }()
	if len(kinds) > 1 {
		r.engine = kinds[0]
	}
	probe := &engineRun{r: r, s: s}
	if err := probe.prepareProfile(sets); err != nil {
		return nil, err
	}
	name, values, err := sweepValues(s.Sweep, probe.l.Params)
	if err != nil {
		return nil, err
	}
	engineChanged, err := r.checkSweep(probe, sets, kinds, name, values)
	if err != nil {
		return nil, err
	}
	parent := s.Out
	if parent == "" {
		if parent, err = safename.Join("--sweep "+name, "runs", s.Now().UTC().Format("20060102T150405Z")+"-sweep-"+name); err != nil {
			return nil, WithCode(CodeInvalid, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		return nil, WithCode(CodeInvalid, fmt.Errorf("run directory %s: %w (a re-test is a new directory)", parent, err))
	}
	res := &Result{Parent: parent, Sweep: &Sweep{Name: name, Columns: sweepColumns(probe.l.Params, metricNames(probe.l))}}
	var cd *cooldownSession
	defer func() { cd.close() }()
	for i, v := range values {
		for j, k := range kinds {
			if len(kinds) > 1 {
				r.engine = k
			}
			runSets := append(append([]string{}, sets...), name+"="+v)
			if i == 0 && j == 0 {
				cd = r.startCooldown(ctx, runSets)
			} else {
				r.cooldownBefore(ctx, cd, res.Dirs[len(res.Dirs)-1])
			}
			dir := filepath.Join(parent, name+"-"+v) // checked above
			if len(kinds) > 1 {
				dir = filepath.Join(dir, fmt.Sprintf("%d-%s", j+1, k))
			}
			kind := k
			if kind == "" {
				kind = probe.engineKind
			}
			fmt.Fprintf(s.Messages, "== sweep %s = %s (%d of %d), engine %s\n", name, v, i+1, len(values), kind)
			res.Dirs = append(res.Dirs, dir)
			res.Sweep.Rows = append(res.Sweep.Rows, SweepRow{Value: v, Engine: kind, Dir: dir})
			labels := append(append([]string{}, s.Labels...), "sweep_param="+name, "sweep_value="+v)
			if _, err := r.runEngine(ctx, runSets, labels, dir, engineChanged[min(j, len(engineChanged)-1)]); err != nil {
				if c := CodeOf(err); c == CodeInvalid || c == CodeInterrupted {
					return res, err
				}
				fmt.Fprintf(s.Messages, "sweep %s = %s, engine %s: %v\n", name, v, kind, err)
				res.Errs = append(res.Errs, err)
			}
		}
	}
	return res, nil
}

// checkSweep checks a sweep before any directory is created: every value
// against the parameter's type, every option against every engine it
// would configure, every value as a directory name. It returns the
// changed function of each engine.
func (r *Runner) checkSweep(probe *engineRun, sets, kinds []string, name string, values []string) ([]func(string) bool, error) {
	for _, v := range values {
		if _, err := r.loadProfile(probe.l.Source, probe.l.Profile.Name, append(append([]string{}, sets...), name+"="+v)); err != nil {
			return nil, err // a value the parameter's type rejects, before anything runs
		}
	}
	engineChanged := []func(string) bool{r.s.Changed}
	if len(kinds) > 1 {
		var err error
		if engineChanged, err = r.perEngineFlags(kinds, r.s.Changed); err != nil {
			return nil, err
		}
		r.engine = kinds[0]
	} else if err := r.checkRunFlags(r.s.Changed); err != nil {
		return nil, err
	}
	for _, v := range values {
		if err := safename.Check("--sweep "+name+" value", name+"-"+v); err != nil {
			return nil, WithCode(CodeInvalid, err)
		}
	}
	return engineChanged, nil
}

// methodColumns are a sweep's columns for a profile without
// sweep_columns that has these metrics (benchmark-1.0, -1.5): few enough
// for the table to stay narrow.
var methodColumns = []string{"formal_j_per_token", "steady_state_j_per_token", "output_throughput_tok_s", "ttft_p50_ms", "tpot_ms"}

// metricNames are the profile's metric names.
func metricNames(l *workflow.Loaded) []string {
	var out []string
	for _, m := range l.Profile.Metrics {
		out = append(out, m.Name)
	}
	return out
}

// sweepColumns are the metrics of the profile's sweep_columns parameter
// (comma-separated); without it, the method's J/token, throughput and
// latency where the profile has them (metrics), else tok_per_sec, ttft_ms
// and power_watts.
func sweepColumns(params map[string]any, metrics []string) []string {
	s, _ := params["sweep_columns"].(string)
	var cols []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		for _, m := range methodColumns {
			if slices.Contains(metrics, m) {
				cols = append(cols, m)
			}
		}
	}
	if len(cols) == 0 {
		cols = []string{"tok_per_sec", "ttft_ms", "power_watts"}
	}
	return cols
}

// sweepCell renders one result: formatted with its format, "n/a" when not
// applicable, "-" when the run has no such result or no results.
func sweepCell(res *record.Results, name string) string {
	if res == nil {
		return "-"
	}
	r, ok := res.Values[name]
	if !ok {
		return "-"
	}
	switch v := r.Value.(type) {
	case nil:
		return "n/a"
	case float64:
		if r.Format != "" {
			return fmt.Sprintf(r.Format, v)
		}
		return fmt.Sprintf("%.4g", v)
	default:
		return fmt.Sprint(v)
	}
}

// Render prints the sweep's rows in format (report.Format*): value,
// engine, the columns, and the run's status (failed checks of severity
// exclude make it "excluded").
func (sw *Sweep) Render(w io.Writer, format string) error {
	name, cols, rows := sw.Name, sw.Columns, sw.Rows
	header := append([]string{name, "engine"}, cols...)
	header = append(header, "status")
	table := [][]string{}
	for _, r := range rows {
		line := []string{r.Value, r.Engine}
		run, err := archive.Load(r.Dir)
		var res *record.Results
		status := "no archive"
		if err == nil {
			res, status = run.Results, string(run.Meta.Status)
			if res != nil && res.Excluded {
				// "check NAME failed" only: the reason is in the run's
				// own summary, and the table stays narrow.
				reason, _, _ := strings.Cut(res.ExcludeReason, ": ")
				status = "excluded: " + reason
			}
		}
		for _, c := range cols {
			line = append(line, sweepCell(res, c))
		}
		table = append(table, append(line, status))
	}
	// Labels, run ids and reasons are the user's text: the Markdown
	// renderer escapes them.
	t := &doc.Table{Columns: doc.Cols(header...), Plain: true}
	t.Add(table...)
	return doc.Render(w, &doc.Document{Sections: []doc.Section{{Blocks: []doc.Block{t}}}, Data: t}, format)
}
