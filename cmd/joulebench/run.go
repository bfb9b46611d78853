package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func (a *app) runCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run PROFILE",
		Short: "Run a profile's procedure against an engine and archive everything",
		Long: `run executes a profile's steps (preflight, monitor, baseline, start and verify
the engine, warm-up, formal requests, release, archive), writes the raw data
to a new run directory as it arrives, then evaluates the profile and prints
the results. With no engine flag it uses the built-in simulator (engine and
GPU), which every output labels SIMULATED.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			labels, _ := cmd.Flags().GetStringArray("label")
			return a.run(cmd.Context(), args[0], sets, labels)
		},
	}
	f := cmd.Flags()
	engineFlags(f)
	telemetryFlags(f)
	f.String("dataset", "", "request set: a built-in (chat, code, long-context) or a file")
	f.String("dataset-format", "", "dataset format: sharegpt, jsonl, chat, code (default: detect)")
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("quick", true, "with the simulator, apply the profile's quick parameter set (its `quick:` section: e.g. shorter baseline and release hold)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	setFlag(f)
	return cmd
}

// run runs the profile against each engine given. With several, each run
// gets its own archive under one directory (its own power monitor, started
// before its first prompt and stopped after its last run), and a table
// compares the engines side by side.
func (a *app) run(ctx context.Context, profile string, sets, labelArgs []string) error {
	kinds := a.v.GetStringSlice("engine")
	if len(kinds) <= 1 {
		return a.runEngine(ctx, profile, sets, labelArgs, a.v.GetString("out"))
	}
	if a.v.GetString("engine-url") != "" {
		return invalidf("--engine-url benchmarks one server: give one --engine with it")
	}
	parent := a.v.GetString("out")
	if parent == "" {
		parent = filepath.Join("runs", time.Now().UTC().Format("20060102T150405Z")+"-engines")
	}
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		return withCode(exitInvalid, fmt.Errorf("run directory %s: %w (a re-test is a new directory)", parent, err))
	}
	defer func() { a.engine = "" }()
	var errs []error
	for i, k := range kinds {
		a.engine = k
		fmt.Fprintf(a.errOut, "== engine %d of %d: %s\n", i+1, len(kinds), k)
		if err := a.runEngine(ctx, profile, sets, labelArgs, filepath.Join(parent, fmt.Sprintf("%d-%s", i+1, k))); err != nil {
			if exitCode(err) == exitInvalid || exitCode(err) == exitInterrupted {
				return err
			}
			fmt.Fprintf(a.errOut, "engine %s: %v\n", k, err)
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(a.out, "\n== engines side by side (%s)\n", parent)
	if err := a.compare(ctx, []string{parent}, "", compare.BuiltinName, nil, report.FormatTable); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// runEngine runs the profile against one engine into dir (default
// runs/<run id>).
func (a *app) runEngine(ctx context.Context, profile string, sets, labelArgs []string, dir string) error {
	src, name, err := workflow.ReadProfile(profile)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	engineKind := a.engineKind()
	simulated := engineKind == "sim"
	// The quick parameter set for the simulator.
	user, err := parseSets(sets)
	if err != nil {
		return err
	}
	var quickApplied []string
	probe, err := loadProfile(src, name, sets)
	if err != nil {
		return err
	}
	quick := simulated && a.v.GetBool("quick")
	if quick {
		for _, k := range sortedKeys(probe.Profile.Quick) {
			if _, set := user[k]; set {
				continue
			}
			sets = append(sets, k+"="+probe.Profile.Quick[k])
			quickApplied = append(quickApplied, k+"="+probe.Profile.Quick[k])
		}
	}
	l, err := loadProfile(src, name, sets)
	if err != nil {
		return err
	}

	labels, err := a.runLabels(labelArgs)
	if err != nil {
		return err
	}
	// Freeze the request sets first: a bad dataset is invalid input, reported
	// before anything starts.
	deps := &steps.Deps{Dataset: a.v.GetString("dataset"), DatasetFormat: a.v.GetString("dataset-format")}
	if err := deps.Prepare(l); err != nil {
		return withCode(exitInvalid, err)
	}

	runID := time.Now().UTC().Format("20060102T150405Z") + "-" + l.Profile.Name + "-" + engineKind
	if dir == "" {
		dir = filepath.Join("runs", runID)
	}
	params := map[string]any{}
	for k, v := range l.Params {
		params[k] = v
	}
	meta := archive.Meta{
		RunID:      runID,
		Simulated:  simulated,
		Profile:    l.Ref,
		Parameters: params,
		Host:       hostInfo(),
		Software:   map[string]string{"joulebench": version, "go": runtime.Version()},
		Status:     archive.StatusRunning,
		Labels:     labels,
	}
	if len(quickApplied) > 0 {
		meta.Labels["quick_parameters"] = strings.Join(quickApplied, " ")
	}
	out, err := archive.Create(dir, meta)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	defer out.Close()
	if err := os.WriteFile(filepath.Join(dir, workflow.ProfileFile), l.Source, 0o644); err != nil {
		return err
	}
	logFile, err := os.Create(out.Path(archive.LogFile))
	if err != nil {
		return err
	}
	defer logFile.Close()
	engineLog, err := os.Create(out.Path(archive.EngineLogFile))
	if err != nil {
		return err
	}
	defer engineLog.Close()
	log := zerolog.New(io.MultiWriter(logFile, zerolog.ConsoleWriter{Out: a.errOut, TimeFormat: "15:04:05", NoColor: true})).
		Level(a.log.GetLevel()).With().Timestamp().Str("run", runID).Logger()

	if simulated {
		fmt.Fprintf(a.errOut, "joulebench run %s on the SIMULATED engine and GPU (not a measurement of real hardware)\n", l.Profile.Name)
	}
	if len(quickApplied) > 0 {
		fmt.Fprintf(a.errOut, "quick parameter set for the simulator (--quick=false for the profile's defaults): %s\n", strings.Join(quickApplied, ", "))
	}

	clock := workflow.NewClock()
	es, err := a.setupEngine(engineEnv{RunDir: dir, EngineLog: engineLog, Clock: clock, Quick: quick})
	if err != nil {
		_ = steps.Finish(ctx, &workflow.RunContext{Clock: clock, Out: out, Loaded: l}, archive.StatusFailed, err.Error())
		return err
	}
	source, telInfo, err := a.setupTelemetry(es, clock)
	if err != nil {
		_ = steps.Finish(ctx, &workflow.RunContext{Clock: clock, Out: out, Loaded: l}, archive.StatusFailed, err.Error())
		return err
	}
	if source != nil {
		defer source.Close()
	}
	if err := out.UpdateMeta(func(m *archive.Meta) {
		if dr, ok := source.(interface{ Driver() string }); ok {
			m.Hardware.Driver = dr.Driver()
		}
		m.Telemetry = telInfo
		m.Simulated = es.Simulated || telInfo.Simulated
		m.Engine = es.Engine.Info()
		m.StartedAt = clock.Now()
	}); err != nil {
		return err
	}
	deps.Engine, deps.Source, deps.NewClient = es.Engine, source, es.NewClient
	deps.Model, deps.Expect, deps.Chat = es.Model, es.Expect, es.Chat
	deps.External, deps.ExitError = es.External, es.ExitError
	interval, families := a.metricsParams(l)
	stopMetrics := es.StartMetrics(ctx, interval, families, func(ms []archive.EngineMetric) error { return out.AppendEngineMetrics(ms...) },
		func(msg string) { log.Warn().Str("component", "engine-metrics").Msg(msg) })
	var metricsOnce sync.Once
	var metricsErr error
	deps.StopMetrics = func() error {
		metricsOnce.Do(func() { metricsErr = stopMetrics() })
		return metricsErr
	}
	bar := a.progress(deps, es.Simulated || telInfo.Simulated)
	rc := &workflow.RunContext{Clock: clock, Out: out, Log: log, Loaded: l, Engine: engineKind}

	runErr := workflow.Execute(ctx, rc, steps.Registry(), deps)
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(a.errOut)
	}
	if runErr != nil {
		status := archive.StatusFailed
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			status = archive.StatusInterrupted
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := deps.StopEngine(stopCtx, rc, 5*time.Second); err != nil {
			log.Warn().Err(err).Msg("stop engine")
		}
		if err := deps.StopSampling(); err != nil {
			log.Warn().Err(err).Msg("telemetry")
		}
		deps.RecordAnomalies(rc)
		if err := deps.StopMetrics(); err != nil {
			log.Warn().Err(err).Msg("engine metrics")
		}
		if err := steps.Finish(stopCtx, rc, status, runErr.Error()); err != nil {
			log.Error().Err(err).Msg("finish archive")
		}
		fmt.Fprintf(a.errOut, "run %s: raw data kept in %s\n", status, dir)
		if status == archive.StatusInterrupted {
			return withCode(exitInterrupted, runErr)
		}
		return withCode(exitFailure, runErr)
	}
	run, err := archive.Load(dir)
	if err != nil {
		return err
	}
	if run.Results == nil {
		return fmt.Errorf("run %s wrote no results", dir)
	}
	if err := report.Results(a.out, report.Run{Meta: run.Meta, Results: run.Results}, report.FormatTable, false); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "archive: %s\n", dir)
	return checksOutcome(run.Results)
}

// metricsParams reads the engine /metrics side path's interval and families
// from the profile's parameters metrics_interval (seconds) and
// metrics_families (comma-separated; empty: the engine's defaults), unless
// --scrape-interval / --metrics-family were given.
func (a *app) metricsParams(l *workflow.Loaded) (time.Duration, []string) {
	var interval time.Duration
	var families []string
	if v, ok := l.Params["metrics_interval"].(float64); ok && v > 0 && !a.v.IsSet("scrape-interval") {
		interval = time.Duration(v * float64(time.Second))
	}
	if v, ok := l.Params["metrics_families"].(string); ok && !a.v.IsSet("metrics-family") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				families = append(families, f)
			}
		}
	}
	return interval, families
}

// runLabels turns --label k=v and --model-params into the run's labels.
func (a *app) runLabels(vals []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, invalidf("--label %q: expected key=value", kv)
		}
		labels[strings.TrimSpace(k)] = v
	}
	if mp := a.v.GetString("model-params"); mp != "" {
		n, err := strconv.ParseFloat(mp, 64)
		if err != nil || n <= 0 {
			return nil, invalidf("--model-params %q: expected a positive number such as 8e9", mp)
		}
		labels["model_params"] = mp
	}
	return labels, nil
}

// progress draws a progress bar of the current stage: requests done/total
// and the current summed power.
func (a *app) progress(d *steps.Deps, simulated bool) *progressbar.ProgressBar {
	if a.v.GetBool("no-progress") {
		return nil
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(a.errOut),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
	)
	stage := ""
	d.Progress = func(p steps.Progress) {
		if p.Stage != stage {
			stage = p.Stage
			bar.ChangeMax(p.Total)
			if p.Total == 0 {
				bar.ChangeMax(-1)
			}
		}
		desc := p.Stage
		if p.HasPower {
			desc += fmt.Sprintf(" | %.0f W", p.PowerW)
			if simulated {
				desc += " (simulated)"
			}
		}
		if p.Failed > 0 {
			desc += fmt.Sprintf(" | %d failed", p.Failed)
		}
		bar.Describe(desc)
		if p.Total > 0 {
			_ = bar.Set(p.Done)
		} else {
			_ = bar.Add(0)
		}
	}
	return bar
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
