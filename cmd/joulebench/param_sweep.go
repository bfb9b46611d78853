package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/report"
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

// sweepRow is one run of a sweep.
type sweepRow struct {
	Value, Engine, Dir string
}

// sweepValues resolves --sweep: the parameter's name and its values.
func sweepValues(spec string, params map[string]any) (string, []string, error) {
	name, list, given := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if _, ok := params[name]; !ok {
		return "", nil, invalidf("--sweep %s: the profile has no parameter %q", spec, name)
	}
	if !given {
		l, ok := params["sweep_"+name].(string)
		if !ok || strings.TrimSpace(l) == "" {
			return "", nil, invalidf("--sweep %s: give the values (--sweep %s=v1,v2) or declare the string parameter sweep_%s in the profile", spec, name, name)
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
		return "", nil, invalidf("--sweep %s: no values", spec)
	}
	return name, vals, nil
}

// runSweep runs the sweep --sweep asks for.
func (a *app) runSweep(ctx context.Context, profile string, sets, labelArgs []string, changed func(string) bool) error {
	kinds := a.v.GetStringSlice("engine")
	if len(kinds) == 0 {
		kinds = []string{""}
	}
	if len(kinds) > 1 && a.v.GetString("engine-url") != "" {
		return invalidf("--engine-url benchmarks one server: give one --engine with it")
	}
	format := a.v.GetString("format")
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	defer func() { a.engine = "" }()
	if len(kinds) > 1 {
		a.engine = kinds[0]
	}
	probe := &engineRun{a: a}
	if err := probe.prepareProfile(profile, sets); err != nil {
		return err
	}
	name, values, err := sweepValues(a.v.GetString("sweep"), probe.l.Params)
	if err != nil {
		return err
	}
	for _, v := range values {
		if _, err := a.loadProfile(probe.l.Source, probe.l.Profile.Name, append(append([]string{}, sets...), name+"="+v)); err != nil {
			return err // a value the parameter's type rejects, before anything runs
		}
	}
	// Every flag against every engine it would configure, before any
	// directory is created.
	engineChanged := []func(string) bool{changed}
	if len(kinds) > 1 {
		var err error
		if engineChanged, err = a.perEngineFlags(kinds, changed); err != nil {
			return err
		}
		a.engine = kinds[0]
	} else if err := a.checkRunFlags(changed); err != nil {
		return err
	}
	// Each value names a directory: checked before any is created.
	for _, v := range values {
		if err := safename.Check("--sweep "+name+" value", name+"-"+v); err != nil {
			return withCode(exitInvalid, err)
		}
	}
	parent := a.v.GetString("out")
	if parent == "" {
		var err error
		if parent, err = safename.Join("--sweep "+name, "runs", time.Now().UTC().Format("20060102T150405Z")+"-sweep-"+name); err != nil {
			return withCode(exitInvalid, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		return withCode(exitInvalid, fmt.Errorf("run directory %s: %w (a re-test is a new directory)", parent, err))
	}
	var rows []sweepRow
	var errs []error
	var cd *cooldownSession
	defer func() { cd.close() }()
	for i, v := range values {
		for j, k := range kinds {
			if len(kinds) > 1 {
				a.engine = k
			}
			runSets := append(append([]string{}, sets...), name+"="+v)
			if i == 0 && j == 0 {
				cd = a.startCooldown(ctx, profile, runSets)
			} else {
				a.cooldownBefore(ctx, cd, rows[len(rows)-1].Dir)
			}
			dir := filepath.Join(parent, name+"-"+v) // checked above
			if len(kinds) > 1 {
				dir = filepath.Join(dir, fmt.Sprintf("%d-%s", j+1, k))
			}
			kind := k
			if kind == "" {
				kind = probe.engineKind
			}
			fmt.Fprintf(a.errOut, "== sweep %s = %s (%d of %d), engine %s\n", name, v, i+1, len(values), kind)
			rows = append(rows, sweepRow{Value: v, Engine: kind, Dir: dir})
			labels := append(append([]string{}, labelArgs...), "sweep_param="+name, "sweep_value="+v)
			if err := a.runEngine(ctx, profile, runSets, labels, dir, engineChanged[min(j, len(engineChanged)-1)]); err != nil {
				if exitCode(err) == exitInvalid || exitCode(err) == exitInterrupted {
					return err
				}
				fmt.Fprintf(a.errOut, "sweep %s = %s, engine %s: %v\n", name, v, kind, err)
				errs = append(errs, err)
			}
		}
	}
	cols := sweepColumns(probe.l.Params)
	fmt.Fprintf(a.out, "\n== sweep of %s (%s): one row per value and engine\n", name, parent)
	if err := renderSweep(a.out, name, cols, rows, format); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// sweepColumns are the metrics of the profile's sweep_columns parameter
// (comma-separated); without it, tok_per_sec, ttft_ms and power_watts.
func sweepColumns(params map[string]any) []string {
	s, _ := params["sweep_columns"].(string)
	var cols []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		cols = []string{"tok_per_sec", "ttft_ms", "power_watts"}
	}
	return cols
}

// sweepCell renders one result: formatted with its format, "n/a" when not
// applicable, "-" when the run has no such result or no results.
func sweepCell(res *archive.Results, name string) string {
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

// renderSweep prints the sweep's rows: value, engine, the columns, and the
// run's status (failed checks of severity exclude make it "excluded").
func renderSweep(w interface{ Write([]byte) (int, error) }, name string, cols []string, rows []sweepRow, format string) error {
	header := append([]string{name, "engine"}, cols...)
	header = append(header, "status")
	table := [][]string{}
	for _, r := range rows {
		line := []string{r.Value, r.Engine}
		run, err := archive.Load(r.Dir)
		var res *archive.Results
		status := "no archive"
		if err == nil {
			res, status = run.Results, string(run.Meta.Status)
			if res != nil && res.Excluded {
				status = "excluded: " + res.ExcludeReason
			}
		}
		for _, c := range cols {
			line = append(line, sweepCell(res, c))
		}
		table = append(table, append(line, status))
	}
	switch format {
	case report.FormatJSON:
		out := make([]map[string]string, len(table))
		for i, l := range table {
			out[i] = map[string]string{}
			for j, h := range header {
				out[i][h] = l[j]
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case report.FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		_ = cw.WriteAll(table)
		return cw.Error()
	case report.FormatMarkdown:
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
		for _, l := range table {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, l := range table {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		return tw.Flush()
	}
}
