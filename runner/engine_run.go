package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// engineRun is one run of a profile against one engine; runEngine fills it
// in phase by phase.
type engineRun struct {
	r   *Runner
	s   *Spec
	dir string
	// now is the clock of the run id.
	now func() time.Time

	engineKind   string
	simulated    bool
	quick        bool
	quickApplied []string
	l            *workflow.Loaded
	deps         *steps.Deps
	labels       map[string]string

	runID string
	// idBase is the run id before any counter (runIDBase).
	idBase string
	out    *archive.Writer
	log    zerolog.Logger
	// engineLog receives the engine's output.
	engineLog io.Writer
	clock     *workflow.Clock
	es        *EngineSetup
	telInfo   record.TelemetryInfo
	rc        *workflow.RunContext

	// gpu is the run's GPU settings (nil: none asked).
	gpu *gpuRun

	// closers run in reverse order when the run ends.
	closers []closer
	// finished: failEarly wrote the run's final status.
	finished bool
}

// closer releases one thing a phase opened; what names it in errors.
type closer struct {
	what string
	f    func() error
}

func (e *engineRun) onClose(what string, f func() error) {
	e.closers = append(e.closers, closer{what, f})
}

// close releases what the phases opened, last opened first. Its error
// joins every closer's, each naming what failed to close (the archive's
// data files, the power source...).
func (e *engineRun) close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		if err := e.closers[i].f(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", e.closers[i].what, err))
		}
	}
	return errors.Join(errs...)
}

// readProfile resolves a profile reference to its YAML and name.
func (r *Runner) readProfile(ref string) ([]byte, string, error) {
	return r.s.FindProfile(ref, "")
}

// loadProfile loads a profile with --set values; its errors are invalid
// input.
func (r *Runner) loadProfile(src []byte, name string, sets []string) (*workflow.Loaded, error) {
	return LoadProfile(src, name, sets, r.s.FindProfile)
}

// LoadProfile loads the profile src (named name in errors) with the
// key=value parameter overrides sets, the profiles it extends found by
// find; its errors are invalid input (CodeInvalid).
func LoadProfile(src []byte, name string, sets []string, find func(ref, from string) ([]byte, string, error)) (*workflow.Loaded, error) {
	overrides, err := workflow.ParseSets(sets)
	if err != nil {
		return nil, err
	}
	l, err := workflow.Load(src, name, workflow.Options{Registry: steps.Registry(), Overrides: overrides, Lookup: find})
	if err != nil {
		return nil, WithCode(CodeInvalid, fmt.Errorf("invalid profile:\n%w", err))
	}
	return l, nil
}

// prepareProfile loads the profile with --set values and, for the
// simulator, the profile's quick parameter set (where --set leaves a
// parameter alone).
func (e *engineRun) prepareProfile(sets []string) error {
	src, name, err := e.r.readProfile(e.s.Profile)
	if err != nil {
		return WithCode(CodeInvalid, err)
	}
	engineKind := e.r.engineKind()
	simulated := e.r.simulatedKind(engineKind)
	e.engineKind, e.simulated = engineKind, simulated
	user, err := workflow.ParseSets(sets)
	if err != nil {
		return err
	}
	probe, err := e.r.loadProfile(src, name, sets)
	if err != nil {
		return err
	}
	sets = append(sets, e.declaredGPUSets(probe)...)
	e.quick = simulated && e.s.Quick
	if e.quick {
		for _, k := range sortedKeys(probe.Profile.Quick) {
			if _, set := user[k]; set || k == "max_tokens" && e.ownOutputLengths(probe) {
				continue
			}
			sets = append(sets, k+"="+probe.Profile.Quick[k])
			e.quickApplied = append(e.quickApplied, k+"="+probe.Profile.Quick[k])
		}
	}
	e.l, err = e.r.loadProfile(src, name, sets)
	return err
}

// ownOutputLengths says whether a requests step of l sends a dataset that
// gives its requests their output lengths (workload.OwnOutputLengths;
// --dataset replaces the step's).
func (e *engineRun) ownOutputLengths(l *workflow.Loaded) bool {
	for _, st := range l.Steps {
		if c, ok := st.Config.(*steps.RequestsConfig); ok {
			name := c.Dataset
			if e.s.Dataset.Name != "" {
				name = e.s.Dataset.Name
			}
			if workload.OwnOutputLengths(name) {
				return true
			}
		}
	}
	return false
}

// prepareRequests freezes the request sets first: a bad dataset is invalid
// input, reported before anything starts.
func (e *engineRun) prepareRequests(ctx context.Context) error {
	dataset, err := e.r.resolveDataset(ctx)
	if err != nil {
		return err
	}
	e.deps = &steps.Deps{Dataset: dataset, DatasetFormat: e.s.Dataset.Format}
	if err := e.deps.Prepare(e.l); err != nil {
		return WithCode(CodeInvalid, err)
	}
	return SteadyFeasible(e.l, e.deps, e.s.Messages)
}

// openArchive creates the run directory with run.json and the profile's
// copy. The run id is the start time, the profile and the engine; when a
// run started in the same second took that id (its directory exists), a
// counter follows: -2, -3, ... The directory is created exclusively, so two
// runs never share one.
func (e *engineRun) openArchive(labels map[string]string) error {
	base := e.runIDBase()
	if err := safename.Check("run id", base); err != nil {
		return WithCode(CodeInvalid, fmt.Errorf("profile %q, engine %q: %w", e.l.Profile.Name, e.engineKind, err))
	}
	for n := 1; ; n++ {
		e.runID = base
		if n > 1 {
			e.runID = fmt.Sprintf("%s-%d", base, n)
		}
		err := e.createArchive(labels)
		if err == nil || e.dir != "" || !errors.Is(err, fs.ErrExist) || n == maxRunIDTries {
			return err
		}
	}
}

// runIDBase is the run id before any counter: the start time (read once:
// the GPU settings' journal, written before the archive, names the same
// run), the profile and the engine.
func (e *engineRun) runIDBase() string {
	if e.idBase == "" {
		e.idBase = e.now().UTC().Format("20060102T150405Z") + "-" + e.l.Profile.Name + "-" + e.engineKind
	}
	return e.idBase
}

// maxRunIDTries bounds the counter of a run id taken in the same second.
const maxRunIDTries = 1000

// createArchive creates the run directory (default runs/<run id>) with
// run.json and the profile's copy.
func (e *engineRun) createArchive(labels map[string]string) error {
	dir := e.dir
	if dir == "" {
		var err error
		if dir, err = safename.Join("run id", "runs", e.runID); err != nil {
			return WithCode(CodeInvalid, err)
		}
	}
	params := map[string]any{}
	for k, v := range e.l.Params {
		params[k] = v
	}
	meta := record.Meta{
		RunID:      e.runID,
		Simulated:  e.simulated,
		Profile:    e.l.Ref,
		Parameters: params,
		Host:       hostInfo(),
		Software:   map[string]string{"joulebench": e.s.Version, "go": runtime.Version()},
		Status:     record.StatusRunning,
		Labels:     labels,
	}
	if len(e.quickApplied) > 0 {
		meta.Labels["quick_parameters"] = strings.Join(e.quickApplied, " ")
	}
	out, err := archive.Create(dir, meta, archive.WithRedact(e.s.Redact.String))
	if err != nil {
		return WithCode(CodeInvalid, err)
	}
	e.dir = dir
	e.out = out
	e.onClose("the archive "+dir, out.Close)
	if err := writeNew(e.dir, workflow.ProfileFile, e.l.Source); err != nil {
		return steps.ArchiveWriteError(e.dir, err)
	}
	return nil
}

// writeNew writes dir/name, which must not exist, through a temp file
// (write, fsync, rename): a full disk leaves no truncated copy.
func writeNew(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	final := filepath.Join(dir, name)
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("write %s: it exists already; it is never overwritten", name)
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// openLogs creates joulebench.log (also shown on the console) and
// engine.log in the archive, and the run's logger.
func (e *engineRun) openLogs() error {
	logFile, err := os.Create(e.out.Path(archive.LogFile))
	if err != nil {
		return err
	}
	e.onClose(archive.LogFile, logFile.Close)
	engineLog, err := os.Create(e.out.Path(archive.EngineLogFile))
	if err != nil {
		return err
	}
	redacted := e.s.Redact.Writer(engineLog)
	e.onClose(archive.EngineLogFile, func() error { return errors.Join(redacted.Close(), engineLog.Close()) })
	e.engineLog = redacted
	e.log = zerolog.New(io.MultiWriter(e.s.Redact.Writer(logFile), zerolog.ConsoleWriter{Out: e.s.Console, TimeFormat: "15:04:05", NoColor: true})).
		Level(e.s.LogLevel).With().Timestamp().Str("run", e.runID).Logger()
	return nil
}

// announce says what kind of run this is.
func (e *engineRun) announce() {
	if e.simulated {
		fmt.Fprintf(e.s.Messages, "joulebench run %s on the SIMULATED engine and GPU (not a measurement of real hardware)\n", e.l.Profile.Name)
	}
	if len(e.quickApplied) > 0 {
		fmt.Fprintf(e.s.Messages, "quick parameter set for the simulator (--quick=false for the profile's defaults): %s\n", strings.Join(e.quickApplied, ", "))
	}
}

// buildEngine builds the engine (not started yet: that is a step); a
// failure is archived as the run's status.
func (e *engineRun) buildEngine(ctx context.Context) error {
	e.clock = workflow.NewClock()
	es, err := e.r.setupEngine(engineEnv{RunID: e.runID, RunDir: e.dir, EngineLog: e.engineLog, Clock: e.clock, Quick: e.quick,
		Note:         func(msg string) { e.log.Info().Str("component", "engine").Msg(msg) },
		GPU:          e.simGPU(),
		ReadyTimeout: readyTimeout(e.l)})
	if err != nil {
		return e.failEarly(ctx, err)
	}
	e.es = es
	e.deps.Engine, e.deps.NewClient = es.Engine, es.NewClient
	e.deps.Model, e.deps.Expect, e.deps.Chat = es.Model, es.Expect, es.Chat
	e.deps.External, e.deps.ExitError = es.External, es.ExitError
	e.deps.Observe = e.s.Observe
	if df := e.r.deployment; df != nil {
		e.deps.LabelDevices = df.labelDevices
	}
	// What the preflight looks for besides the engine's port.
	e.deps.PidDir, e.deps.ServerNames, e.deps.ContainerTools = all.PidDir(), e.s.Registry.ServerProcesses(), []string{"docker", "podman"}
	return nil
}

// startTelemetry opens the power source and records it, the hardware and
// the engine in run.json; a failure is archived as the run's status.
func (e *engineRun) startTelemetry(ctx context.Context) error {
	var source telemetry.Source
	var telInfo record.TelemetryInfo
	var err error
	if e.s.OpenTelemetry != nil {
		env := TelemetryEnv{Clock: e.clock}
		switch {
		case e.es.SimNodes != nil:
			env.Sim = &SimGPU{Nodes: e.es.SimNodes}
		case e.es.SimLoad != nil:
			env.Sim = &SimGPU{Load: e.es.SimLoad, Config: e.es.SimTelemetry}
		}
		source, telInfo, err = e.s.OpenTelemetry(ctx, env)
	}
	if err != nil {
		return e.failEarly(ctx, err)
	}
	if source != nil {
		e.onClose("the power source "+source.Name(), source.Close)
	}
	e.telInfo = telInfo
	e.deps.Source = source
	es, clock := e.es, e.clock
	if err := e.checkDevices(ctx, source, telInfo); err != nil {
		return err
	}
	return e.out.UpdateMeta(func(m *record.Meta) {
		if dr, ok := source.(telemetry.DriverReporter); ok {
			m.Hardware.Driver = dr.Driver()
		}
		m.Telemetry = telInfo
		m.Simulated = es.Simulated || telInfo.Simulated
		m.Engine = es.Engine.Info()
		if dp, ok := es.Engine.(engines.Deployer); ok {
			m.Deployment = dp.Record()
		}
		if d := e.s.ImageDigest; d != "" {
			if m.Engine.Extra == nil {
				m.Engine.Extra = map[string]any{}
			}
			m.Engine.Extra["image_digest"] = d
		}
		m.StartedAt = clock.Now()
	})
}

// checkDevices holds the run's devices as the power source lists them
// (labelled by the deployment's parts), its deployment, clocks and the
// engine's parallelism as the options give it, to the rules the archive's
// reader holds them to (archive.CheckDevices), before anything is
// measured: a part that lists a device the source does not have, or an
// engine of tensor parallel N over fewer GPUs measured, is invalid input
// (exit 2) rather than a whole run whose archive is refused. A source
// that cannot list its devices now is left to the monitor step, which
// says why.
func (e *engineRun) checkDevices(ctx context.Context, source telemetry.Source, tel record.TelemetryInfo) error {
	if source == nil {
		return nil
	}
	devs, err := source.Devices(ctx)
	if err != nil {
		return nil
	}
	if e.deps.LabelDevices != nil {
		e.deps.LabelDevices(devs)
	}
	m := e.out.Meta()
	m.Telemetry, m.Hardware.Devices, m.Engine = tel, devs, e.es.Engine.Info()
	if dp, ok := e.es.Engine.(engines.Deployer); ok {
		m.Deployment = dp.Record()
	}
	if err := archive.CheckDevices(&m); err != nil {
		return Invalidf("power source %s: the devices it measures do not hold the run (the archive would be refused): %v", source.Name(), err)
	}
	return nil
}

// stopEngine stops the engine if a step started it and nothing stopped it
// (a no-op otherwise: StopEngine runs once).
func (e *engineRun) stopEngine() error {
	if e.deps == nil || e.deps.Engine == nil || e.rc == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.deps.StopEngine(ctx, e.rc, 5*time.Second); err != nil {
		e.log.Warn().Err(err).Msg("stop engine")
		return err
	}
	return nil
}

// failEarly archives a run that failed before its steps began (status
// failed, with err as the reason; on a full disk through the archive's
// status reserve) and returns err, joined with the error of archiving it.
// It does so once; without an archive it only returns err.
func (e *engineRun) failEarly(ctx context.Context, err error) error {
	if e.out == nil || e.finished {
		return err
	}
	e.finished = true
	clock := e.clock
	if clock == nil {
		clock = workflow.NewClock()
	}
	if ferr := steps.Finish(ctx, &workflow.RunContext{Clock: clock, Out: e.out, Log: e.log, Loaded: e.l}, record.StatusFailed, err.Error()); ferr != nil {
		return errors.Join(err, fmt.Errorf("archive the failure: %w", ferr))
	}
	return err
}

// startScraper starts the engine /metrics side path into
// engine_metrics.jsonl; the steps stop it (once) through deps.StopMetrics.
func (e *engineRun) startScraper(ctx context.Context) {
	interval, families := metricsParams(e.l, e.s.Engine)
	log := e.log
	stopMetrics := e.es.StartMetrics(ctx, interval, families, func(ms []record.EngineMetric) error { return e.out.AppendEngineMetrics(ms...) },
		func(msg string) { log.Warn().Str("component", "engine-metrics").Msg(msg) })
	var metricsOnce sync.Once
	var metricsErr error
	e.deps.StopMetrics = func() error {
		metricsOnce.Do(func() { metricsErr = stopMetrics() })
		return metricsErr
	}
}

// cleanup ends a run whose steps failed: the engine stopped, sampling and
// the scraper stopped, the archive finished with status and reason (raw
// data kept), and the exit code chosen.
func (e *engineRun) cleanup(ctx context.Context, runErr error) error {
	status := record.StatusFailed
	if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
		status = record.StatusInterrupted
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, rc, log := e.deps, e.rc, e.log
	// Open stages end at the last power sample, so that their energy is
	// computable (a stage ending after the last sample has no data to its
	// end).
	if err := d.EndStages(stopCtx, rc); err != nil {
		log.Error().Err(err).Msg("end the open stages")
		runErr = errors.Join(runErr, err)
	}
	if _, err := d.StopEngine(stopCtx, rc, 5*time.Second); err != nil {
		log.Warn().Err(err).Msg("stop engine")
	}
	if err := d.StopSampling(); err != nil {
		log.Warn().Err(err).Msg("telemetry")
	}
	d.RecordAnomalies(rc)
	if err := d.RecordClockSync(stopCtx, rc); err != nil {
		log.Warn().Err(err).Msg("telemetry")
	}
	if err := d.StopMetrics(); err != nil {
		log.Warn().Err(err).Msg("engine metrics")
	}
	if err := steps.Finish(stopCtx, rc, status, runErr.Error()); err != nil {
		log.Error().Err(err).Msg("finish archive")
		runErr = errors.Join(runErr, fmt.Errorf("finish the archive: %w", err))
	}
	fmt.Fprintf(e.s.Messages, "run %s: raw data kept in %s\n", status, e.dir)
	if status == record.StatusInterrupted {
		return WithCode(CodeInterrupted, runErr)
	}
	return WithCode(CodeFailure, runErr)
}

// report re-reads the finished archive and hands it to the Report hook,
// whose error (checks, formulas) is the run's.
func (e *engineRun) report(ctx context.Context) error {
	run, err := archive.Load(e.dir)
	if err != nil {
		return err
	}
	if run.Results == nil {
		return fmt.Errorf("run %s wrote no results", e.dir)
	}
	if e.s.Report == nil {
		return nil
	}
	return e.s.Report(ctx, Report{Dir: e.dir, Loaded: e.l, Run: run, OneOfMany: e.r.engine != ""})
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
// the options set them.
func metricsParams(l *workflow.Loaded, o EngineOptions) (time.Duration, []string) {
	var interval time.Duration
	var families []string
	if v, ok := l.Params["metrics_interval"].(float64); ok && v > 0 && !o.ScrapeIntervalSet {
		interval = time.Duration(v * float64(time.Second))
	}
	if v, ok := l.Params["metrics_families"].(string); ok && !o.MetricFamiliesSet {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				families = append(families, f)
			}
		}
	}
	return interval, families
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

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
