package steps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// Deps is what the step implementations use. Its exported fields are the
// configuration: the run command sets them before the steps run, and they
// are only read from then on. What the steps build up during the run (the
// request sets, the power samples, the sampler, the engine's exit) is the
// run's own state, kept apart in run.
type Deps struct {
	Engine engines.Engine
	Source telemetry.Source
	// Client sends the requests; when nil it is made by NewClient once the
	// engine is ready (its URL may only be known then).
	Client    loadgen.Doer
	NewClient func(baseURL string) loadgen.Doer
	// Model is the model id requested (checked by verify_engine).
	Model string
	// Expect holds the identity the run was configured with; empty fields
	// are not checked.
	Expect engines.Identity
	// Dataset and DatasetFormat, when set, replace the profile's dataset.
	Dataset, DatasetFormat string
	// Chat selects /v1/chat/completions (else /v1/completions).
	Chat bool
	// Progress, when set, is told what the run is doing.
	Progress func(runprogress.Snapshot)
	// External is true for an already running server (--engine-url):
	// joulebench neither starts nor stops it, so the run has no startup or
	// release stage and no engine_started or engine_exited event.
	External bool
	// ExitError, when set, says why the engine exited on its own (exit
	// status and the tail of engine.log).
	ExitError func() error
	// StopMetrics, when set, stops the engine /metrics side path (it may be
	// called more than once); the archive step calls it before finishing.
	StopMetrics func() error
	// What the preflight's processes check looks for besides the engine's
	// port (each unset: not looked for): PidDir holds the pid files of
	// managed engines (process.Orphans: engines a killed joulebench left
	// running); ServerNames are the process names of inference servers
	// (engines.Registry.ServerProcesses); ContainerTools the container
	// tools whose running containers are listed (docker, podman: those not
	// installed are skipped).
	PidDir         string
	ServerNames    []string
	ContainerTools []string
	// LabelDevices, when set, gives the power source's devices the host
	// and role of the deployment part that owns them, before run.json
	// lists them.
	LabelDevices func([]record.Device)
	// Observe, when set, is the load of an observe step (joulebench
	// measure): a command or a window of live traffic.
	Observe *Observe

	run runState
}

// runState is what one run's steps build up. sets is written by Prepare
// before any step runs and only read after it; the rest is guarded by mu:
// the sampler's sink, the telemetry watcher, the load generator's progress
// and the run command's cleanup reach it from goroutines other than the
// steps'.
type runState struct {
	// request sets frozen by Prepare, by step configuration
	sets map[any]*workload.RequestSet

	mu      sync.Mutex
	samples []record.PowerSample
	sampler *telemetry.Sampler
	stopSmp context.CancelFunc
	stopped bool
	exitAt  float64
	// dead is closed when the sampler hit a fatal error (deadErr says
	// which): every wait of the run ends on it at once.
	dead    chan struct{}
	deadErr error
}

// errSamplingStopped is why a monitor step that comes after sampling was
// stopped (the archive step, or the run's cleanup) starts nothing.
var errSamplingStopped = errors.New("power sampling was already stopped")

// setSampler makes smp the run's sampler, stopped by cancel (its loop's
// context) and Sampler.Stop; errSamplingStopped when StopSampling came
// first.
func (d *Deps) setSampler(smp *telemetry.Sampler, cancel context.CancelFunc) error {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	if d.run.stopped {
		return errSamplingStopped
	}
	d.run.sampler, d.run.stopSmp = smp, cancel
	return nil
}

// sampler is the run's sampler (nil before the monitor step, or without
// a power source).
func (d *Deps) sampler() *telemetry.Sampler {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	return d.run.sampler
}

// sampling reports whether power is sampled now: the monitor step started
// the sampler and nothing stopped it.
func (d *Deps) sampling() bool {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	return d.run.sampler != nil && !d.run.stopped
}

func (d *Deps) report(stage string, p loadgen.Progress, total int) {
	if d.Progress == nil {
		return
	}
	pr := runprogress.Snapshot{Stage: stage, Done: p.Done, Sent: p.Sent, Total: total, Failed: p.Failed, Tokens: p.Tokens}
	if smp := d.sampler(); smp != nil {
		for _, s := range smp.Latest() {
			pr.PowerW += s.PowerW
			pr.HasPower = true
		}
	}
	d.Progress(pr)
}

// StopSampling stops the sampler (idempotent) and returns its error.
//
// The sampler's sink takes d.run.mu, and Sampler.Stop waits for a tick in
// progress (its Read and sink): d.run.mu must not be held across Stop.
func (d *Deps) StopSampling() error {
	d.run.mu.Lock()
	stopped := d.run.stopped
	d.run.stopped = true // a monitor step after this starts nothing
	smp, cancel := d.run.sampler, d.run.stopSmp
	d.run.mu.Unlock()
	if smp == nil || stopped {
		return nil
	}
	// Cancel first: a Read blocked on the source gets its context done
	// (the sampler's loop runs under it), then Stop waits for the loop.
	cancel()
	err := smp.Stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// watchTelemetry turns the sampler's fatal error into the run's: dead is
// closed and every wait of a step (baseline, requests, release) ends with
// the error at once instead of running on frozen samples.
func (d *Deps) watchTelemetry(ctx context.Context, smp *telemetry.Sampler) {
	d.run.mu.Lock()
	d.run.dead = make(chan struct{})
	dead := d.run.dead
	d.run.mu.Unlock()
	go func() {
		select {
		case err := <-smp.Err():
			d.run.mu.Lock()
			d.run.deadErr = err
			d.run.mu.Unlock()
			close(dead)
		case <-ctx.Done():
		}
	}()
}

// telemetryDead returns a channel closed when the power source died (nil,
// which blocks for ever, while it lives or when there is none).
func (d *Deps) telemetryDead() <-chan struct{} {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	return d.run.dead
}

// TelemetryErr returns the fatal error of the power source, nil while it
// lives.
func (d *Deps) TelemetryErr() error {
	d.run.mu.Lock()
	defer d.run.mu.Unlock()
	if d.run.deadErr == nil {
		return nil
	}
	var ae *archiveError
	if errors.As(d.run.deadErr, &ae) {
		// The sampler died writing its samples: the disk failed, not
		// the power source.
		return ae
	}
	return fmt.Errorf("power source failed: %w", d.run.deadErr)
}

// RecordAnomalies writes what the power source noticed in its data (an
// energy counter reset, a stale counter, the end of a recording) and what
// the sampler refused or flagged (invalid or implausible readings) into
// run.json as events named "<kind>:<device>" and into the log: a warning
// each, except notes (Anomaly.Note), logged once per detail at info level.
func (d *Deps) RecordAnomalies(rc *workflow.RunContext) {
	var all []telemetry.Anomaly
	if ar, ok := d.Source.(telemetry.AnomalyReporter); ok {
		all = ar.Anomalies()
	}
	if smp := d.sampler(); smp != nil {
		all = append(all, smp.Anomalies()...)
	}
	logged := map[string]bool{}
	for _, a := range all {
		switch {
		case !a.Note:
			rc.Log.Warn().Str("device", a.Device).Str("kind", a.Kind).Msg(a.Detail)
		case !logged[a.Detail]:
			logged[a.Detail] = true
			rc.Log.Info().Str("component", "telemetry").Msg(a.Detail)
		}
		if err := rc.Event(a.Kind+":"+a.Device, a.T); err != nil {
			rc.Log.Error().Err(err).Msg("record telemetry anomaly")
		}
	}
}

// throttled reports (and resets) whether the power source saw clocks
// throttled since the previous call, when it can tell.
func (d *Deps) throttled() (bool, string) {
	if tr, ok := d.Source.(telemetry.ThrottleReporter); ok {
		return tr.Throttled()
	}
	return false, ""
}

// sampleNow takes a sample at a stage boundary when sampling runs.
func (d *Deps) sampleNow(ctx context.Context) error {
	smp := d.sampler()
	if smp == nil {
		return nil
	}
	return smp.SampleNow(ctx)
}

// wait sleeps for dur; it ends early with an error when ctx is done or the
// power source died.
func (d *Deps) wait(ctx context.Context, dur time.Duration) error {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-d.telemetryDead():
		return d.TelemetryErr()
	case <-t.C:
		return nil
	}
}

// send runs requests through the load generator, archiving each as it
// finishes, and returns what they came to (the latest done_at, the
// failures). An engine that exits during the
// stage ends it with an error.
func send(ctx context.Context, rc *workflow.RunContext, d *Deps, stage string, lc loadgen.Config, reqs []workload.Request) (*outcome, error) {
	if d.Client == nil {
		return &outcome{}, fmt.Errorf("no client: the engine was not started")
	}
	return sendWith(ctx, rc, d, d.Client, stage, lc, reqs)
}

// sendWith is send through the client cl (d.Client, or d.Client with its
// burst already prepared).
func sendWith(ctx context.Context, rc *workflow.RunContext, d *Deps, cl loadgen.Doer, stage string, lc loadgen.Config, reqs []workload.Request) (*outcome, error) {
	return sendRun(ctx, rc, d, stage, len(reqs), func(ctx context.Context, sink func(record.Request), progress func(loadgen.Progress)) error {
		return loadgen.Run(ctx, lc, reqs, cl, sink, progress)
	})
}

// sendRun is sendWith with the sending given: send sends the stage's
// requests, handing each finished one to sink (and the counts to
// progress, when it reports them); total is the number it will send.
func sendRun(ctx context.Context, rc *workflow.RunContext, d *Deps, stage string, total int,
	send func(ctx context.Context, sink func(record.Request), progress func(loadgen.Progress)) error) (*outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan struct{})
	dead := d.telemetryDead()
	go func() {
		select {
		case <-d.Engine.Exited():
			close(exited)
			cancel()
		case <-dead:
			cancel()
		case <-ctx.Done():
		}
	}()
	o := &outcome{}
	var sinkErr error
	sink := func(r record.Request) {
		o.add(r)
		if err := rc.Out.AppendRequest(r); err != nil && sinkErr == nil {
			sinkErr = archiveErr(rc, err)
			cancel()
		}
	}
	var last loadgen.Progress
	err := send(ctx, sink, func(p loadgen.Progress) { last = p; d.report(stage, p, total) })
	if last.BoundedFirst > 0 {
		rc.Log.Info().Str("stage", stage).Int("requests", last.Done).Int("first_tokens_bounded", last.BoundedFirst).Int("chunks_bounded", last.BoundedChunks).
			Dur("widest_bound", last.BoundedFirstWithin).
			Msg("first tokens read together with a later chunk: their time is that chunk's, an upper bound")
	}
	if terr := d.TelemetryErr(); terr != nil {
		return o, fmt.Errorf("during %s: %w", stage, terr)
	}
	if o.failed > 0 && !d.External {
		// A crash cuts the streams a moment before its exit is seen.
		select {
		case <-d.Engine.Exited():
		case <-time.After(2 * time.Second):
		}
	}
	select {
	case <-exited:
	case <-d.Engine.Exited():
	default:
		if sinkErr != nil {
			return o, sinkErr
		}
		return o, err
	}
	if d.ExitError != nil {
		if xe := d.ExitError(); xe != nil {
			return o, fmt.Errorf("during %s: %w", stage, xe)
		}
	}
	return o, fmt.Errorf("engine %s exited on its own during %s", d.Engine.Kind(), stage)
}

// Prepare loads and freezes every request set the profile's steps use, so
// that a bad dataset is reported (with file:line) before anything runs.
func (d *Deps) Prepare(l *workflow.Loaded) error {
	d.run.sets = map[any]*workload.RequestSet{}
	for _, st := range l.Steps {
		var set *workload.RequestSet
		var err error
		switch c := st.Config.(type) {
		case *RequestsConfig:
			if set, err = loadSet(d, c.Dataset, requestOptions(c)); err == nil {
				err = set.CheckRequests(requestsSent(c, len(set.Prompts)))
			}
		case *WarmupConfig:
			if c.Prompt != "" || c.Requests == 0 {
				continue
			}
			set, err = loadSet(d, "chat", workload.Options{Count: c.Requests, Repeat: true, MaxTokens: c.MaxTokens})
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: request set: %w", st.Label(), err)
		}
		d.run.sets[st.Config] = set
	}
	return nil
}

// RequestCount is the number of requests in the set Prepare froze for the
// step configuration cfg (0 when it has none).
func (d *Deps) RequestCount(cfg any) int {
	if set, ok := d.run.sets[cfg]; ok {
		return len(set.Prompts)
	}
	return 0
}

// MostInFlight is how many requests of the set Prepare froze for cfg can
// be in flight at once (workload.RequestSet.MostInFlight; 0 without one).
func (d *Deps) MostInFlight(cfg any) int {
	if set, ok := d.run.sets[cfg]; ok {
		return set.MostInFlight()
	}
	return 0
}

// requestSet returns the set Prepare froze for a step, or loads it.
func (d *Deps) requestSet(cfg any, dataset string, opt workload.Options) (*workload.RequestSet, error) {
	if set, ok := d.run.sets[cfg]; ok {
		return set, nil
	}
	return loadSet(d, dataset, opt)
}

func requestOptions(c *RequestsConfig) workload.Options {
	opt := workload.Options{Count: c.Count, Seed: c.Seed, Shuffle: c.Shuffle, MaxTokens: c.MaxTokens, IgnoreEOS: c.IgnoreEOS, Repeat: true}
	if c.Temperature != nil {
		opt.Temperature = *c.Temperature
	}
	return opt
}

func loadSet(d *Deps, dataset string, opt workload.Options) (*workload.RequestSet, error) {
	if d.Dataset != "" {
		dataset = d.Dataset
		opt.Format = d.DatasetFormat
	}
	return workload.Open(dataset, opt)
}

// StopEngine stops the engine once and records engine_exited.
func (d *Deps) StopEngine(ctx context.Context, rc *workflow.RunContext, grace time.Duration) (float64, error) {
	d.run.mu.Lock()
	if d.run.exitAt > 0 {
		t := d.run.exitAt
		d.run.mu.Unlock()
		return t, nil
	}
	d.run.mu.Unlock()
	if d.Engine == nil || d.External {
		return 0, nil
	}
	at, err := d.Engine.Stop(ctx, grace)
	t := rc.Clock.At(at)
	if at.IsZero() {
		t = rc.Clock.Now()
	}
	d.run.mu.Lock()
	d.run.exitAt = t
	d.run.mu.Unlock()
	if e := rc.Event("engine_exited", t); e != nil && err == nil {
		err = e
	}
	if xs, ok := d.Engine.(engines.ExitStatuser); ok && xs.ExitStatus() != "" {
		if e := rc.Out.UpdateMeta(func(m *record.Meta) {
			if m.Engine.Extra == nil {
				m.Engine.Extra = map[string]any{}
			}
			m.Engine.Extra["exit_status"] = xs.ExitStatus()
		}); e != nil && err == nil {
			err = e
		}
	}
	return t, err
}
