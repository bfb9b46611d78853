package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/internal/safename"
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
			return a.run(cmd.Context(), args[0], sets, labels, cmd.Flags().Changed)
		},
	}
	f := cmd.Flags()
	a.engineFlags(f)
	telemetryFlags(f)
	f.String("dataset", "", "request set: a built-in (chat, code, long-context), random (synthetic), sharegpt or hf:OWNER/NAME[@REV]/PATH (downloaded to $XDG_CACHE_HOME/joulebench), or a file")
	datasetFlags(f)
	f.String("dataset-format", "", "dataset format: sharegpt, jsonl, chat, code, conversation (multi-turn, sent turn by turn) (default: detect)")
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("quick", true, "with the simulator, apply the profile's quick parameter set (its quick section: e.g. shorter baseline and release hold)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.Int("runs", 0, "asiai: measured runs per prompt (the same as --set runs=N)")
	loadFlags(f)
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	resultsFlags(f, "format of the results (table: a summary of the headline figures; --all for every value), and of the side-by-side and winner tables of several engines: table, markdown (to paste into an issue or pull request), csv, json")
	multiEngineFlags(f)
	setFlag(f)
	baselineFlags(f)
	return cmd
}

// run runs the profile against each engine given. With several, each run
// gets its own archive under one directory (its own power monitor, started
// before its first prompt and stopped after its last run), and a table
// compares the engines side by side.
//
// changed reports whether the user set a flag on the command line: every
// flag is checked against the engine it would configure before any
// directory is created.
func (a *app) run(ctx context.Context, profile string, sets, labelArgs []string, changed func(string) bool) error {
	sets, err := runsFlag(sets, a.v.GetInt("runs"), changed("runs"))
	if err != nil {
		return err
	}
	if sets, err = a.applyLoadFlags(profile, sets, a.loadFlagsGiven(changed)); err != nil {
		return err
	}
	if a.v.GetString("sweep") != "" {
		if a.v.GetString("output-file") != "" {
			return invalidf("--output-file writes one run's results: with --sweep, give each run's archive to analyze --output-file")
		}
		return a.runSweep(ctx, profile, sets, labelArgs, changed)
	}
	kinds := a.v.GetStringSlice("engine")
	if len(kinds) <= 1 {
		return a.runEngine(ctx, profile, sets, labelArgs, a.v.GetString("out"), changed)
	}
	if a.v.GetString("engine-url") != "" {
		return invalidf("--engine-url benchmarks one server: give one --engine with it")
	}
	defer func() { a.engine = "" }()
	engineChanged, err := a.perEngineFlags(kinds, changed)
	if err != nil {
		return err
	}
	format := a.v.GetString("format")
	if err := report.CheckFormat(format); err != nil {
		return withCode(exitInvalid, err)
	}
	if a.v.GetString("output-file") != "" {
		return invalidf("--output-file writes one run's results: with several engines, give each run's archive to analyze --output-file")
	}
	// The profile and its parameters are checked before the directory of
	// the engines' runs is created.
	src, name, err := a.readProfile(profile)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	if _, err := a.loadProfile(src, name, sets); err != nil {
		return err
	}
	parent := a.v.GetString("out")
	if parent == "" {
		if parent, err = newDir(filepath.Join("runs", time.Now().UTC().Format("20060102T150405Z")+"-engines")); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(parent, 0o755); err != nil {
			return withCode(exitInvalid, fmt.Errorf("run directory %s: %w (a re-test is a new directory)", parent, err))
		}
	}
	var errs []error
	var dirs []string
	var cd *cooldownSession
	defer func() { cd.close() }()
	for i, k := range kinds {
		a.engine = k
		if i == 0 {
			cd = a.startCooldown(ctx, profile, sets)
		} else {
			a.cooldownBefore(ctx, cd, dirs[i-1])
		}
		fmt.Fprintf(a.errOut, "== engine %d of %d: %s\n", i+1, len(kinds), k)
		dir, err := safename.Join("engine", parent, fmt.Sprintf("%d-%s", i+1, k))
		if err != nil {
			return withCode(exitInvalid, err)
		}
		dirs = append(dirs, dir)
		if err := a.runEngine(ctx, profile, sets, labelArgs, dir, engineChanged[i]); err != nil {
			if exitCode(err) == exitInvalid || exitCode(err) == exitInterrupted {
				return err
			}
			fmt.Fprintf(a.errOut, "engine %s: %v\n", k, err)
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(a.out, "\n== engines side by side (%s)\n", parent)
	// compare prints its table, then says whether a formula could not be
	// evaluated; the winner table follows either way.
	cmpErr := a.compare(ctx, []string{parent}, "", compare.BuiltinName, nil, format)
	if err := a.winnerTable(parent, dirs, format); err != nil && cmpErr == nil {
		cmpErr = err
	}
	if len(errs) > 0 {
		return errs[0] // a failed engine run is the cause of what compare lacks
	}
	return cmpErr
}

// runEngine runs the profile against one engine into dir (default
// runs/<run id>), phase by phase: prepare the profile and its request
// sets, check every flag and the file-descriptor limit, open the archive
// and logs, build the engine, start telemetry, the /metrics scraper and
// the progress bar, execute the steps, then clean up after a failure or
// report the results. Nothing is created before the checks pass.
func (a *app) runEngine(ctx context.Context, profile string, sets, labelArgs []string, dir string, changed func(string) bool) error {
	r := &engineRun{a: a, dir: dir}
	defer r.close()
	if err := a.checkRunFlags(changed); err != nil {
		return err
	}
	if err := r.prepareProfile(profile, sets); err != nil {
		return err
	}
	labels, err := a.runLabels(labelArgs)
	if err != nil {
		return err
	}
	if err := r.prepareRequests(ctx); err != nil {
		return err
	}
	if err := r.checkFileLimit(systemFileLimit{}); err != nil {
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
	if err := r.applyExtraBody(); err != nil {
		return err
	}
	if err := r.hostLabels(); err != nil {
		return err
	}
	if err := r.recordCooldown(); err != nil {
		return err
	}
	if err := r.startTelemetry(ctx); err != nil {
		return err
	}
	r.startScraper(ctx)
	bar := a.progress(r.deps, powerLabel(r.telInfo, r.es.Simulated), r.console)
	r.rc = &workflow.RunContext{Clock: r.clock, Out: r.out, Log: r.log, Loaded: r.l, Engine: r.engineKind}
	// Whatever path the run takes (success, failure, panic), the engine
	// it started does not outlive it.
	r.onClose(r.stopEngine)
	runErr := workflow.Execute(ctx, r.rc, steps.Registry(), r.deps)
	if bar != nil {
		bar.finish()
		r.console.tty.Store(nil)
	}
	if runErr != nil {
		return r.cleanup(ctx, runErr)
	}
	return r.report(ctx)
}

// engineRun is one run of a profile against one engine; runEngine fills it
// in phase by phase.
type engineRun struct {
	a   *app
	dir string
	// now is the clock of the run id (nil: time.Now).
	now func() time.Time

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
	// console is stderr for the run's log lines (above the progress line
	// on a terminal).
	console *consoleOut
	clock   *workflow.Clock
	es      *engineSetup
	telInfo archive.TelemetryInfo
	rc      *workflow.RunContext

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
func (r *engineRun) prepareRequests(ctx context.Context) error {
	dataset, err := r.a.resolveDataset(ctx)
	if err != nil {
		return err
	}
	r.deps = &steps.Deps{Dataset: dataset, DatasetFormat: r.a.v.GetString("dataset-format")}
	if err := r.deps.Prepare(r.l); err != nil {
		return withCode(exitInvalid, err)
	}
	return r.a.steadyFeasible(r.l, r.deps)
}

// openArchive creates the run directory with run.json and the profile's
// copy. The run id is the start time, the profile and the engine; when a
// run started in the same second took that id (its directory exists), a
// counter follows: -2, -3, ... The directory is created exclusively, so two
// runs never share one.
func (r *engineRun) openArchive(labels map[string]string) error {
	now := r.now
	if now == nil {
		now = time.Now
	}
	base := now().UTC().Format("20060102T150405Z") + "-" + r.l.Profile.Name + "-" + r.engineKind
	if err := safename.Check("run id", base); err != nil {
		return withCode(exitInvalid, fmt.Errorf("profile %q, engine %q: %w", r.l.Profile.Name, r.engineKind, err))
	}
	for n := 1; ; n++ {
		r.runID = base
		if n > 1 {
			r.runID = fmt.Sprintf("%s-%d", base, n)
		}
		err := r.createArchive(labels)
		if err == nil || r.dir != "" || !errors.Is(err, fs.ErrExist) || n == maxRunIDTries {
			return err
		}
	}
}

// maxRunIDTries bounds the counter of a run id taken in the same second.
const maxRunIDTries = 1000

// createArchive creates the run directory (default runs/<run id>) with
// run.json and the profile's copy.
func (r *engineRun) createArchive(labels map[string]string) error {
	dir := r.dir
	if dir == "" {
		var err error
		if dir, err = safename.Join("run id", "runs", r.runID); err != nil {
			return withCode(exitInvalid, err)
		}
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
	out, err := archive.Create(dir, meta, archive.WithRedact(r.a.redact.String))
	if err != nil {
		return withCode(exitInvalid, err)
	}
	r.dir = dir
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
	r.engineLog = r.a.redact.Writer(engineLog)
	r.console = &consoleOut{w: r.a.errOut}
	r.log = zerolog.New(io.MultiWriter(r.a.redact.Writer(logFile), zerolog.ConsoleWriter{Out: r.console, TimeFormat: "15:04:05", NoColor: true})).
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
	es, err := r.a.setupEngine(engineEnv{RunID: r.runID, RunDir: r.dir, EngineLog: r.engineLog, Clock: r.clock, Quick: r.quick,
		Note:         func(msg string) { r.log.Info().Str("component", "engine").Msg(msg) },
		ReadyTimeout: readyTimeout(r.l)})
	if err != nil {
		r.failEarly(ctx, err)
		return err
	}
	r.es = es
	r.deps.Engine, r.deps.NewClient = es.Engine, es.NewClient
	r.deps.Model, r.deps.Expect, r.deps.Chat = es.Model, es.Expect, es.Chat
	r.deps.External, r.deps.ExitError = es.External, es.ExitError
	// What the preflight looks for besides the engine's port.
	r.deps.PidDir, r.deps.ServerNames, r.deps.ContainerTools = process.DefaultPidDir(), r.a.engines.ServerProcesses(), []string{"docker", "podman"}
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
		if d := r.a.v.GetString("image-digest"); d != "" {
			if m.Engine.Extra == nil {
				m.Engine.Extra = map[string]any{}
			}
			m.Engine.Extra["image_digest"] = d
		}
		m.StartedAt = clock.Now()
	})
}

// stopEngine stops the engine if a step started it and nothing stopped it
// (a no-op otherwise: StopEngine runs once).
func (r *engineRun) stopEngine() error {
	if r.deps == nil || r.deps.Engine == nil || r.rc == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.deps.StopEngine(ctx, r.rc, 5*time.Second); err != nil {
		r.log.Warn().Err(err).Msg("stop engine")
		return err
	}
	return nil
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
	// Open stages end at the last power sample, so that their energy is
	// computable (a stage ending after the last sample has no data to its
	// end).
	d.EndStages(stopCtx, rc)
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
//
// The results are evaluated again from the archive exactly as `analyze
// DIR` evaluates them (the archived profile and parameters), so that the
// exit code of run is the one analyze gives on its archive: 4 when a
// formula could not be evaluated (a replay that ends mid-run, say), 3
// when a check of severity fail or exclude did not pass.
func (r *engineRun) report(ctx context.Context) error {
	run, err := archive.Load(r.dir)
	if err != nil {
		return err
	}
	if run.Results == nil {
		return fmt.Errorf("run %s wrote no results", r.dir)
	}
	view, err := r.a.resultsView()
	if err != nil {
		return err
	}
	defer fmt.Fprintf(r.a.out, "archive: %s\n", r.dir)
	if base := r.a.v.GetString("baseline"); base != "" {
		return r.a.gateRun(ctx, r.l, run, base, view.format, view.all)
	}
	view.hint = "every value: joulebench analyze " + r.dir + " --all"
	if r.a.engine != "" {
		// One run of several (engines, sweep values): its summary; --format
		// is the side-by-side tables'.
		view.format, view.all, view.file = report.FormatTable, false, ""
	}
	return r.a.evaluateAndShow(ctx, r.dir, "", nil, view)
}

// readyTimeout is the ready_timeout of the profile's start_engine step (0
// when it has none).
func readyTimeout(l *workflow.Loaded) time.Duration {
	for _, s := range l.Steps {
		if c, ok := s.Config.(*steps.StartEngineConfig); ok {
			return c.ReadyTimeout.D()
		}
	}
	return 0
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

// powerLabel is what the progress says of the power it shows: "replayed"
// (a recording played back, real power but not this run's), "simulated",
// or "" for measured power.
func powerLabel(tel archive.TelemetryInfo, engineSimulated bool) string {
	switch {
	case tel.Source == telReplay:
		return "replayed"
	case tel.Simulated || engineSimulated:
		return "simulated"
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkRunFlags validates every flag of a run before anything is created:
// the inputs it names (checkRunInputs), the engine's (checkEngineFlags)
// and the power source's.
func (a *app) checkRunFlags(changed func(string) bool) error {
	if err := a.checkRunInputs(changed); err != nil {
		return err
	}
	if err := a.checkEngineFlags(changed); err != nil {
		return err
	}
	if d := a.v.GetString("image-digest"); d != "" && !imageDigestRE.MatchString(d) {
		return invalidf("--image-digest %q: want sha256: and 64 hex digits (as `docker inspect --format '{{index .RepoDigests 0}}'` shows after the @)", d)
	}
	o, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	if o.has(telSim) && !a.simulatedKind(a.engineKind()) {
		return invalidf("--telemetry sim: the simulated GPU follows the simulated engine only (--engine sim)")
	}
	return nil
}

// imageDigestRE is a container image digest as registries give it.
var imageDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// newDir creates the directory base, or base-2, base-3, ... when a run
// started in the same second took it, and returns the one it created.
func newDir(base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	for n := 1; n <= maxRunIDTries; n++ {
		dir := base
		if n > 1 {
			dir = fmt.Sprintf("%s-%d", base, n)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("run directory: %w", err)
		}
	}
	return "", fmt.Errorf("run directory %s: %d directories of that name exist already", base, maxRunIDTries)
}

// fileLimit is the process's limit on open files (RLIMIT_NOFILE).
type fileLimit interface {
	// Get returns the soft and hard limits; ok is false where unknown.
	Get() (soft, hard uint64, ok bool)
	// RaiseToHard sets the soft limit to the hard one.
	RaiseToHard() error
}

// fileReserve are the descriptors a run needs besides its connections:
// the archive's files and logs, the engine's pipes, telemetry and the
// /metrics side path, the Go runtime.
const fileReserve = 64

// connections is the most requests a step of the profile keeps in flight
// at once, each one an open connection: a whole request set at once in
// unlimited mode, the concurrency otherwise (a Poisson stream without a cap
// may have its whole set in flight).
func (r *engineRun) connections() int {
	most := 0
	for _, st := range r.l.Steps {
		n := 0
		switch c := st.Config.(type) {
		case *steps.RequestsConfig:
			n = r.deps.RequestCount(c) * max(c.Repeat, 1)
			if c.MaxRequests > 0 {
				n = min(n, c.MaxRequests)
			}
			if c.Mode == "concurrency" || c.Mode == "poisson" && c.Concurrency > 0 {
				n = min(n, c.Concurrency)
			}
		case *steps.WarmupConfig:
			n = c.Concurrency
			if count := r.deps.RequestCount(c); count > 0 {
				n = min(max(n, 1), count)
			}
		}
		most = max(most, n)
	}
	return most
}

// checkFileLimit makes sure the run can open the connections its profile
// asks for: it raises the soft limit on open files up to the hard limit
// when that is needed and allowed, and otherwise refuses the run before
// anything starts. With the simulator both ends of each connection are in
// this process.
func (r *engineRun) checkFileLimit(lim fileLimit) error {
	conns := r.connections()
	need := uint64(conns) + fileReserve
	if r.simulated {
		need += uint64(conns)
	}
	soft, hard, ok := lim.Get()
	if !ok || need <= soft {
		return nil
	}
	if need <= hard {
		if err := lim.RaiseToHard(); err == nil {
			return nil
		}
	}
	return invalidf("the profile keeps up to %d requests in flight, which needs about %d open files, but this process may open %d (hard limit %d): raise the limit (ulimit -n) or send fewer requests at once (request_count, or the requests step's concurrency)",
		conns, need, soft, hard)
}

// runsFlag turns --runs N into --set runs=N (asiai's flag). Both given
// with different values is invalid.
func runsFlag(sets []string, n int, given bool) ([]string, error) {
	if !given {
		return sets, nil
	}
	if n < 1 {
		return nil, invalidf("--runs %d: at least 1", n)
	}
	for _, kv := range sets {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "runs" && strings.TrimSpace(v) != strconv.Itoa(n) {
			return nil, invalidf("--runs %d and --set %s disagree: give one", n, kv)
		}
	}
	return append(slices.Clone(sets), "runs="+strconv.Itoa(n)), nil
}
