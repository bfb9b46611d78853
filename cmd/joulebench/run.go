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
	"github.com/joulebench/joulebench/telemetry"
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
	a.engineFlags(f)
	telemetryFlags(f)
	f.String("dataset", "", "request set: a built-in (chat, code, long-context) or a file")
	f.String("dataset-format", "", "dataset format: sharegpt, jsonl, chat, code (default: detect)")
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("quick", true, "with the simulator, apply the profile's quick parameter set (its `quick:` section: e.g. shorter baseline and release hold)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	setFlag(f)
	baselineFlags(f)
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
// runs/<run id>), phase by phase: prepare the profile and its request
// sets, open the archive and logs, build the engine, start telemetry, the
// /metrics scraper and the progress bar, execute the steps, then clean up
// after a failure or report the results.
func (a *app) runEngine(ctx context.Context, profile string, sets, labelArgs []string, dir string) error {
	r := &engineRun{a: a, dir: dir}
	defer r.close()
	if err := r.prepareProfile(profile, sets); err != nil {
		return err
	}
	labels, err := a.runLabels(labelArgs)
	if err != nil {
		return err
	}
	if err := r.prepareRequests(); err != nil {
		return err
	}
	if err := r.openArchive(labels); err != nil {
		return err
	}
	if err := r.openLogs(); err != nil {
		return err
	}
	r.announce()
	if err := r.buildEngine(ctx); err != nil {
		return err
	}
	if err := r.startTelemetry(ctx); err != nil {
		return err
	}
	r.startScraper(ctx)
	bar := a.progress(r.deps, r.es.Simulated || r.telInfo.Simulated)
	r.rc = &workflow.RunContext{Clock: r.clock, Out: r.out, Log: r.log, Loaded: r.l, Engine: r.engineKind}
	runErr := workflow.Execute(ctx, r.rc, steps.Registry(), r.deps)
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(a.errOut)
	}
	if runErr != nil {
		return r.cleanup(ctx, runErr)
	}
	return r.report()
}

// engineRun is one run of a profile against one engine; runEngine fills it
// in phase by phase.
type engineRun struct {
	a   *app
	dir string

	engineKind   string
	simulated    bool
	quick        bool
	quickApplied []string
	l            *workflow.Loaded
	deps         *steps.Deps

	runID string
	out   *archive.Writer
	log   zerolog.Logger
	// engineLog receives the engine's output.
	engineLog io.Writer
	clock     *workflow.Clock
	es        *engineSetup
	telInfo   archive.TelemetryInfo
	rc        *workflow.RunContext

	// closers run in reverse order when the run ends.
	closers []func() error
}

func (r *engineRun) onClose(f func() error) { r.closers = append(r.closers, f) }

// close releases what the phases opened, last opened first.
func (r *engineRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		_ = r.closers[i]()
	}
}

// prepareProfile loads the profile with --set values and, for the
// simulator, the profile's quick parameter set (where --set leaves a
// parameter alone).
func (r *engineRun) prepareProfile(profile string, sets []string) error {
	src, name, err := r.a.readProfile(profile)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	engineKind := r.a.engineKind()
	simulated := r.a.simulatedKind(engineKind)
	r.engineKind, r.simulated = engineKind, simulated
	user, err := parseSets(sets)
	if err != nil {
		return err
	}
	probe, err := r.a.loadProfile(src, name, sets)
	if err != nil {
		return err
	}
	r.quick = simulated && r.a.v.GetBool("quick")
	if r.quick {
		for _, k := range sortedKeys(probe.Profile.Quick) {
			if _, set := user[k]; set {
				continue
			}
			sets = append(sets, k+"="+probe.Profile.Quick[k])
			r.quickApplied = append(r.quickApplied, k+"="+probe.Profile.Quick[k])
		}
	}
	r.l, err = r.a.loadProfile(src, name, sets)
	return err
}

// prepareRequests freezes the request sets first: a bad dataset is invalid
// input, reported before anything starts.
func (r *engineRun) prepareRequests() error {
	r.deps = &steps.Deps{Dataset: r.a.v.GetString("dataset"), DatasetFormat: r.a.v.GetString("dataset-format")}
	if err := r.deps.Prepare(r.l); err != nil {
		return withCode(exitInvalid, err)
	}
	return nil
}

// openArchive creates the run directory with run.json and the profile's
// copy.
func (r *engineRun) openArchive(labels map[string]string) error {
	r.runID = time.Now().UTC().Format("20060102T150405Z") + "-" + r.l.Profile.Name + "-" + r.engineKind
	if r.dir == "" {
		r.dir = filepath.Join("runs", r.runID)
	}
	params := map[string]any{}
	for k, v := range r.l.Params {
		params[k] = v
	}
	meta := archive.Meta{
		RunID:      r.runID,
		Simulated:  r.simulated,
		Profile:    r.l.Ref,
		Parameters: params,
		Host:       hostInfo(),
		Software:   map[string]string{"joulebench": version, "go": runtime.Version()},
		Status:     archive.StatusRunning,
		Labels:     labels,
	}
	if len(r.quickApplied) > 0 {
		meta.Labels["quick_parameters"] = strings.Join(r.quickApplied, " ")
	}
	out, err := archive.Create(r.dir, meta)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	r.out = out
	r.onClose(out.Close)
	return os.WriteFile(filepath.Join(r.dir, workflow.ProfileFile), r.l.Source, 0o644)
}

// openLogs creates joulebench.log (also shown on stderr) and engine.log in
// the archive, and the run's logger.
func (r *engineRun) openLogs() error {
	logFile, err := os.Create(r.out.Path(archive.LogFile))
	if err != nil {
		return err
	}
	r.onClose(logFile.Close)
	engineLog, err := os.Create(r.out.Path(archive.EngineLogFile))
	if err != nil {
		return err
	}
	r.onClose(engineLog.Close)
	r.engineLog = engineLog
	r.log = zerolog.New(io.MultiWriter(logFile, zerolog.ConsoleWriter{Out: r.a.errOut, TimeFormat: "15:04:05", NoColor: true})).
		Level(r.a.log.GetLevel()).With().Timestamp().Str("run", r.runID).Logger()
	return nil
}

// announce says on stderr what kind of run this is.
func (r *engineRun) announce() {
	if r.simulated {
		fmt.Fprintf(r.a.errOut, "joulebench run %s on the SIMULATED engine and GPU (not a measurement of real hardware)\n", r.l.Profile.Name)
	}
	if len(r.quickApplied) > 0 {
		fmt.Fprintf(r.a.errOut, "quick parameter set for the simulator (--quick=false for the profile's defaults): %s\n", strings.Join(r.quickApplied, ", "))
	}
}

// buildEngine builds the engine (not started yet: that is a step); a
// failure is archived as the run's status.
func (r *engineRun) buildEngine(ctx context.Context) error {
	r.clock = workflow.NewClock()
	es, err := r.a.setupEngine(engineEnv{RunDir: r.dir, EngineLog: r.engineLog, Clock: r.clock, Quick: r.quick})
	if err != nil {
		r.failEarly(ctx, err)
		return err
	}
	r.es = es
	r.deps.Engine, r.deps.NewClient = es.Engine, es.NewClient
	r.deps.Model, r.deps.Expect, r.deps.Chat = es.Model, es.Expect, es.Chat
	r.deps.External, r.deps.ExitError = es.External, es.ExitError
	return nil
}

// startTelemetry opens the power source and records it, the hardware and
// the engine in run.json; a failure is archived as the run's status.
func (r *engineRun) startTelemetry(ctx context.Context) error {
	source, telInfo, err := r.a.setupTelemetry(r.es, r.clock)
	if err != nil {
		r.failEarly(ctx, err)
		return err
	}
	if source != nil {
		r.onClose(source.Close)
	}
	r.telInfo = telInfo
	r.deps.Source = source
	es, clock := r.es, r.clock
	return r.out.UpdateMeta(func(m *archive.Meta) {
		if dr, ok := source.(telemetry.DriverReporter); ok {
			m.Hardware.Driver = dr.Driver()
		}
		m.Telemetry = telInfo
		m.Simulated = es.Simulated || telInfo.Simulated
		m.Engine = es.Engine.Info()
		m.StartedAt = clock.Now()
	})
}

// failEarly archives a run that failed before its steps began.
func (r *engineRun) failEarly(ctx context.Context, err error) {
	_ = steps.Finish(ctx, &workflow.RunContext{Clock: r.clock, Out: r.out, Loaded: r.l}, archive.StatusFailed, err.Error())
}

// startScraper starts the engine /metrics side path into
// engine_metrics.jsonl; the steps stop it (once) through deps.StopMetrics.
func (r *engineRun) startScraper(ctx context.Context) {
	interval, families := r.a.metricsParams(r.l)
	log := r.log
	stopMetrics := r.es.StartMetrics(ctx, interval, families, func(ms []archive.EngineMetric) error { return r.out.AppendEngineMetrics(ms...) },
		func(msg string) { log.Warn().Str("component", "engine-metrics").Msg(msg) })
	var metricsOnce sync.Once
	var metricsErr error
	r.deps.StopMetrics = func() error {
		metricsOnce.Do(func() { metricsErr = stopMetrics() })
		return metricsErr
	}
}

// cleanup ends a run whose steps failed: the engine stopped, sampling and
// the scraper stopped, the archive finished with status and reason (raw
// data kept), and the exit code chosen.
func (r *engineRun) cleanup(ctx context.Context, runErr error) error {
	status := archive.StatusFailed
	if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
		status = archive.StatusInterrupted
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, rc, log := r.deps, r.rc, r.log
	if _, err := d.StopEngine(stopCtx, rc, 5*time.Second); err != nil {
		log.Warn().Err(err).Msg("stop engine")
	}
	if err := d.StopSampling(); err != nil {
		log.Warn().Err(err).Msg("telemetry")
	}
	d.RecordAnomalies(rc)
	if err := d.StopMetrics(); err != nil {
		log.Warn().Err(err).Msg("engine metrics")
	}
	if err := steps.Finish(stopCtx, rc, status, runErr.Error()); err != nil {
		log.Error().Err(err).Msg("finish archive")
	}
	fmt.Fprintf(r.a.errOut, "run %s: raw data kept in %s\n", status, r.dir)
	if status == archive.StatusInterrupted {
		return withCode(exitInterrupted, runErr)
	}
	return withCode(exitFailure, runErr)
}

// report re-reads the finished archive and prints its results table; the
// checks decide the exit code.
func (r *engineRun) report() error {
	run, err := archive.Load(r.dir)
	if err != nil {
		return err
	}
	if run.Results == nil {
		return fmt.Errorf("run %s wrote no results", r.dir)
	}
	if base := r.a.v.GetString("baseline"); base != "" {
		defer fmt.Fprintf(r.a.out, "archive: %s\n", r.dir)
		return r.a.gateRun(context.Background(), r.l, run, base, report.FormatTable, false)
	}
	if err := report.Results(r.a.out, report.Run{Meta: run.Meta, Results: run.Results}, report.FormatTable, false); err != nil {
		return err
	}
	fmt.Fprintf(r.a.out, "archive: %s\n", r.dir)
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
