package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/workflow"
)

// Runner runs one Spec. It holds what the runs of one command share: the
// engine kind in progress (several engines, or a sweep of several) and
// the cooldown that preceded the next run.
type Runner struct {
	s *Spec
	// engine is the engine kind of the run in progress when the spec has
	// several; empty otherwise.
	engine string
	// cooldown is the cooldown that preceded the next run, for its
	// run.json.
	cooldown *cooldownResult
	// gpuSets are the --set values of gpu_power_limit_w and gpu_clocks,
	// taken out of the profile's (gpuSetsGiven: either was given).
	gpuSets      record.GPUSettingValues
	gpuSetsGiven bool
	// deployment is the --deployment file, read (nil: one engine).
	deployment *DeploymentFile
}

// New checks spec's hooks and fills in its defaults.
func New(spec Spec) (*Runner, error) {
	if spec.FindProfile == nil {
		return nil, errors.New("runner: spec has no FindProfile")
	}
	if spec.Registry == nil {
		spec.Registry = all.Registry()
	}
	if spec.Messages == nil {
		spec.Messages = io.Discard
	}
	if spec.Console == nil {
		spec.Console = spec.Messages
	}
	if spec.Changed == nil {
		spec.Changed = func(string) bool { return false }
	}
	if spec.Format == "" {
		spec.Format = report.FormatTable
	}
	if spec.Now == nil {
		spec.Now = time.Now
	}
	if spec.FileLimit == nil {
		spec.FileLimit = systemFileLimit{}
	}
	if spec.Host == nil {
		spec.Host = systemHost{}
	}
	r := &Runner{s: &spec}
	if spec.Deployment != "" {
		if spec.Engine.URL != "" || len(spec.Engines) > 1 {
			return nil, Invalidf("--deployment names the run's engine parts: give no --engine-url nor several --engine with it")
		}
		df, err := ReadDeployment(spec.Deployment, spec.Registry)
		if err != nil {
			return nil, err
		}
		r.deployment = df
	}
	return r, nil
}

// Run runs spec: one run, a run per engine (each with its own archive
// under one directory, a cooldown between them), or a sweep. The error is
// one run's, or what stopped the command (invalid input, an interrupt);
// with several runs, those that failed are in the Result's Errs.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	r, err := New(spec)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx)
}

// Run runs the spec (see the package function Run).
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	s := r.s
	sets, err := r.applyLoad(s.Profile, s.Sets)
	if err != nil {
		return nil, err
	}
	sets, r.gpuSets, r.gpuSetsGiven = gpusettings.SplitSets(sets)
	if s.SteadyRequests {
		if sets, err = r.steadyRequests(s.Profile, sets); err != nil {
			return nil, err
		}
	}
	if s.Sweep != "" {
		if s.OutputFile != "" {
			return nil, Invalidf("--output-file writes one run's results: with --sweep, give each run's archive to analyze --output-file")
		}
		return r.runSweep(ctx, sets)
	}
	if len(s.Engines) <= 1 {
		if s.CooldownIdleW > 0 {
			r.cooldownTo(ctx, sets, s.CooldownIdleW)
		}
		dir, err := r.runEngine(ctx, sets, s.Labels, s.Out, s.Changed)
		return &Result{Dirs: []string{dir}}, err
	}
	return r.runEngines(ctx, sets)
}

// runEngines runs the profile against each engine in turn, each into its
// own directory under one parent, with the cooldown between them.
func (r *Runner) runEngines(ctx context.Context, sets []string) (*Result, error) {
	s, kinds := r.s, r.s.Engines
	if s.Engine.URL != "" {
		return nil, Invalidf("--engine-url benchmarks one server: give one --engine with it")
	}
	defer func() { r.engine = "" }()
	engineChanged, err := r.perEngineFlags(kinds, s.Changed)
	if err != nil {
		return nil, err
	}
	if err := report.CheckFormat(s.Format); err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	if s.OutputFile != "" {
		return nil, Invalidf("--output-file writes one run's results: with several engines, give each run's archive to analyze --output-file")
	}
	// The profile and its parameters are checked before the directory of
	// the engines' runs is created.
	src, name, err := r.readProfile(s.Profile)
	if err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	if _, err := r.loadProfile(src, name, sets); err != nil {
		return nil, err
	}
	parent, err := r.parentDir("engines")
	if err != nil {
		return nil, err
	}
	res := &Result{Parent: parent}
	var cd *cooldownSession
	defer func() { cd.close() }()
	for i, k := range kinds {
		r.engine = k
		if i == 0 {
			cd = r.startCooldown(ctx, sets)
		} else {
			r.cooldownBefore(ctx, cd, res.Dirs[i-1])
		}
		fmt.Fprintf(s.Messages, "== engine %d of %d: %s\n", i+1, len(kinds), k)
		dir, err := safename.Join("engine", parent, fmt.Sprintf("%d-%s", i+1, k))
		if err != nil {
			return res, WithCode(CodeInvalid, err)
		}
		res.Dirs = append(res.Dirs, dir)
		if _, err := r.runEngine(ctx, sets, s.Labels, dir, engineChanged[i]); err != nil {
			if c := CodeOf(err); c == CodeInvalid || c == CodeInterrupted {
				return res, err
			}
			fmt.Fprintf(s.Messages, "engine %s: %v\n", k, err)
			res.Errs = append(res.Errs, err)
		}
	}
	return res, nil
}

// parentDir creates the directory of several runs: Out, or
// runs/<time>-<what> (-2, -3, ... when taken).
func (r *Runner) parentDir(what string) (string, error) {
	parent := r.s.Out
	if parent == "" {
		return newDir(filepath.Join("runs", r.s.Now().UTC().Format("20060102T150405Z")+"-"+what))
	}
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return "", err
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		return "", WithCode(CodeInvalid, fmt.Errorf("run directory %s: %w (a re-test is a new directory)", parent, err))
	}
	return parent, nil
}

// runEngine runs the profile against one engine into dir (default
// runs/<run id>), phase by phase: prepare the profile and its request
// sets, check every option and the file-descriptor limit, open the archive
// and logs, build the engine, start telemetry, the /metrics scraper and
// the progress display, execute the steps, then clean up after a failure
// or report the results. Nothing is created before the checks pass. It
// returns the run's directory ("" when none was created).
func (r *Runner) runEngine(ctx context.Context, sets, labelArgs []string, dir string, changed func(string) bool) (_ string, err error) {
	e := &engineRun{r: r, s: r.s, dir: dir, now: r.s.Now}
	defer func() {
		// A failure to close the archive's data files or the power
		// source is the run's too.
		if cerr := e.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := e.prepare(ctx, sets, labelArgs, changed); err != nil {
		return "", err
	}
	if err := e.applyGPU(); err != nil {
		return "", err
	}
	if err := e.open(ctx); err != nil {
		return e.dir, err
	}
	var update func(runprogress.Snapshot)
	var finish func()
	if r.s.StartProgress != nil {
		update, finish = r.s.StartProgress(e.telInfo, e.es.Simulated)
	}
	e.deps.Progress = update
	e.rc = &workflow.RunContext{Clock: e.clock, Out: e.out, Log: e.log, Loaded: e.l, Engine: e.engineKind}
	// Whatever path the run takes (success, failure, panic), the engine
	// it started does not outlive it.
	e.onClose("the engine", e.stopEngine)
	runErr := workflow.Execute(ctx, e.rc, steps.Registry(), e.deps)
	if finish != nil {
		finish()
	}
	if runErr != nil {
		return e.dir, e.cleanup(ctx, runErr)
	}
	if err := e.summariseGPU(); err != nil {
		return e.dir, err
	}
	return e.dir, e.report(ctx)
}

// prepare checks everything a run needs before anything is created: the
// options, the profile, the labels, the request sets and the open-files
// limit.
func (e *engineRun) prepare(ctx context.Context, sets, labelArgs []string, changed func(string) bool) error {
	if err := e.r.checkRunFlags(changed); err != nil {
		return err
	}
	if err := e.prepareProfile(sets); err != nil {
		return err
	}
	labels, err := runLabels(labelArgs, e.s.ModelParams)
	if err != nil {
		return err
	}
	e.labels = labels
	if err := e.prepareRequests(ctx); err != nil {
		return err
	}
	if err := e.checkFileLimit(e.s.FileLimit); err != nil {
		return err
	}
	return e.prepareGPU()
}

// open creates the archive and logs, builds the engine and starts the
// power source and the /metrics scraper. Once the archive exists, a
// failure is archived as the run's status (failEarly).
func (e *engineRun) open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			err = e.failEarly(ctx, err)
		}
	}()
	if err := e.openArchive(e.labels); err != nil {
		return err
	}
	if err := e.archiveGPU(); err != nil {
		return err
	}
	if err := e.openLogs(); err != nil {
		return err
	}
	e.announce()
	if err := e.buildEngine(ctx); err != nil {
		return err
	}
	if err := e.applyExtraBody(); err != nil {
		return err
	}
	if err := e.hostLabels(); err != nil {
		return err
	}
	if err := e.recordCooldown(); err != nil {
		return err
	}
	if err := e.startTelemetry(ctx); err != nil {
		return e.discardRefused(err)
	}
	if err := e.recordGPU(ctx); err != nil {
		return err
	}
	e.startScraper(ctx)
	return nil
}

// runLabels turns --label k=v and --model-params into the run's labels.
func runLabels(vals []string, modelParams string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, Invalidf("--label %q: expected key=value", kv)
		}
		labels[strings.TrimSpace(k)] = v
	}
	if mp := modelParams; mp != "" {
		n, err := strconv.ParseFloat(mp, 64)
		if err != nil || n <= 0 {
			return nil, Invalidf("--model-params %q: expected a positive number such as 8e9", mp)
		}
		labels["model_params"] = mp
	}
	return labels, nil
}
