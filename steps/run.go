package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// Deps is what the step implementations use; the run command builds it.
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
	Progress func(Progress)
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

	// request sets frozen by Prepare, by step configuration
	sets map[any]*workload.RequestSet

	mu      sync.Mutex
	samples []archive.PowerSample
	sampler *telemetry.Sampler
	stopSmp context.CancelFunc
	stopped bool
	exitAt  float64
}

// Progress is a snapshot for the progress display.
type Progress struct {
	Stage      string
	Done, Sent int
	Total      int
	Failed     int
	Tokens     int
	PowerW     float64
	HasPower   bool
}

func deps(rc *workflow.RunContext) (*Deps, error) {
	d, ok := rc.Deps.(*Deps)
	if !ok || d == nil {
		return nil, fmt.Errorf("internal: run context has no step dependencies")
	}
	return d, nil
}

// Runners returns the implementation of every step kind.
func Runners() map[string]workflow.RunFunc {
	return map[string]workflow.RunFunc{
		"preflight":     runPreflight,
		"monitor":       runMonitor,
		"baseline":      runBaseline,
		"start_engine":  runStartEngine,
		"verify_engine": runVerifyEngine,
		"warmup":        runWarmup,
		"requests":      runRequests,
		"release":       runRelease,
		"archive":       runArchive,
	}
}

func (d *Deps) report(stage string, p loadgen.Progress, total int) {
	if d.Progress == nil {
		return
	}
	pr := Progress{Stage: stage, Done: p.Done, Sent: p.Sent, Total: total, Failed: p.Failed, Tokens: p.Tokens}
	if d.sampler != nil {
		for _, s := range d.sampler.Latest() {
			pr.PowerW += s.PowerW
			pr.HasPower = true
		}
	}
	d.Progress(pr)
}

func runPreflight(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*PreflightConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	var problems []string
	for _, check := range c.Check {
		switch check {
		case "engine":
			if d.Engine == nil {
				problems = append(problems, "no engine configured")
			}
		case "model":
			if d.Model == "" {
				problems = append(problems, "no model requested")
			}
		case "disk":
			var st syscall.Statfs_t
			if err := syscall.Statfs(rc.Out.Dir(), &st); err == nil {
				free := int64(st.Bavail) * int64(st.Bsize) / (1 << 20)
				if free < int64(c.MinFreeDiskMB) {
					problems = append(problems, fmt.Sprintf("only %d MB free for the archive, need %d", free, c.MinFreeDiskMB))
				}
			}
		case "gpus":
			if d.Source == nil {
				rc.Log.Warn().Msg("preflight: no power source; energy metrics will be not applicable")
				continue
			}
			problems = append(problems, busyGPUs(ctx, d, c.MaxGPUMemUsedMB)...)
		case "processes":
			// A managed engine's port must be free: something answering
			// there is a leftover server that would share the GPUs.
			if d.Engine == nil || d.External {
				continue
			}
			if u, err := url.Parse(d.Engine.BaseURL()); err == nil && u.Host != "" {
				if conn, err := net.DialTimeout("tcp", u.Host, 300*time.Millisecond); err == nil {
					conn.Close()
					problems = append(problems, fmt.Sprintf("%s is already in use (a leftover engine process?)", u.Host))
				}
			}
		case "requests":
			// Frozen and checked by Prepare before the run started.
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("preflight failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// busyGPUs names the devices that already hold more memory than maxMB
// (0: no limit) before the engine starts.
func busyGPUs(ctx context.Context, d *Deps, maxMB int) []string {
	if maxMB <= 0 {
		return nil
	}
	rs, err := d.Source.Read(ctx)
	if err != nil {
		return []string{fmt.Sprintf("reading the GPUs: %v", err)}
	}
	var out []string
	for _, r := range rs {
		if r.MemUsedBytes > int64(maxMB)<<20 {
			out = append(out, fmt.Sprintf("device %s already has %d MB of memory in use (limit %d MB: a leftover process?)", r.Device, r.MemUsedBytes>>20, maxMB))
		}
	}
	return out
}

func runMonitor(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*MonitorConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if d.Source == nil {
		return nil
	}
	devs, err := d.Source.Devices(ctx)
	if err != nil {
		return fmt.Errorf("telemetry %s: %w", d.Source.Name(), err)
	}
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.Hardware.Devices = devs
		if m.Hardware.Chip == "" && len(devs) > 0 {
			m.Hardware.Chip = devs[0].Name // asiai's hw_chip
		}
		m.Telemetry.IntervalS = c.Interval.Seconds()
	}); err != nil {
		return err
	}
	var lastFlush time.Time
	sink := func(s []archive.PowerSample) error {
		d.mu.Lock()
		d.samples = append(d.samples, s...)
		d.mu.Unlock()
		if err := rc.Out.AppendPower(s...); err != nil {
			return err
		}
		// Raw data reaches the disk at least once a second, so a crash
		// loses no more than that.
		if time.Since(lastFlush) >= time.Second {
			lastFlush = time.Now()
			return rc.Out.Flush()
		}
		return nil
	}
	d.sampler = telemetry.NewSampler(d.Source, c.Interval.D(), telemetry.Clock(rc.Clock.Now), sink,
		func(msg string) { rc.Log.Warn().Str("component", "telemetry").Msg(msg) })
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stopSmp = cancel
	d.sampler.Start(sctx)
	return d.sampler.SampleNow(ctx)
}

// StopSampling stops the sampler (idempotent) and returns its error.
func (d *Deps) StopSampling() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sampler == nil || d.stopped {
		return nil
	}
	d.stopped = true
	err := d.sampler.Stop()
	d.stopSmp()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// RecordAnomalies writes what the power source noticed in its data (an
// energy counter reset, a stale counter) into run.json as events named
// "<kind>:<device>" and into the log.
func (d *Deps) RecordAnomalies(rc *workflow.RunContext) {
	ar, ok := d.Source.(telemetry.AnomalyReporter)
	if !ok {
		return
	}
	for _, a := range ar.Anomalies() {
		rc.Log.Warn().Str("device", a.Device).Str("kind", a.Kind).Msg(a.Detail)
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
	if d.sampler == nil {
		return nil
	}
	return d.sampler.SampleNow(ctx)
}

func sleep(ctx context.Context, dur time.Duration) error {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func runBaseline(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*BaselineConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	start := rc.Clock.Now()
	rc.StageStart("baseline", start)
	d.report("baseline", loadgen.Progress{}, 0)
	if err := sleep(ctx, c.Duration.D()); err != nil {
		return err
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	return rc.StageEnd("baseline", rc.Clock.Now())
}

func runStartEngine(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*StartEngineConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if d.Engine == nil {
		return fmt.Errorf("no engine")
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	if !d.External {
		t := rc.Clock.Now()
		rc.StageStart("startup", t)
		if err := rc.Event("engine_started", t); err != nil {
			return err
		}
	}
	d.report("startup", loadgen.Progress{}, 0)
	if err := d.Engine.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", d.Engine.Kind(), err)
	}
	if err := d.Engine.WaitReady(ctx, c.ReadyTimeout.D()); err != nil {
		return fmt.Errorf("%s not ready: %w", d.Engine.Kind(), err)
	}
	if err := rc.Event("engine_ready", rc.Clock.Now()); err != nil {
		return err
	}
	if d.Client == nil && d.NewClient != nil {
		d.Client = d.NewClient(d.Engine.BaseURL())
	}
	info := d.Engine.Info()
	return rc.Out.UpdateMeta(func(m *archive.Meta) { m.Engine = info })
}

func runVerifyEngine(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*VerifyEngineConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	id, err := d.Engine.Identity(ctx)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	want := d.Expect
	if want.Model == "" {
		want.Model = d.Model
	}
	var mism []string
	for _, k := range c.Check {
		switch k {
		case "model":
			if want.Model != "" && id.Model != want.Model {
				mism = append(mism, fmt.Sprintf("model: requested %q, served %q", want.Model, id.Model))
			}
		case "revision":
			if want.Revision != "" && id.Revision != want.Revision {
				mism = append(mism, fmt.Sprintf("revision: requested %q, served %q", want.Revision, id.Revision))
			}
		case "engine_version":
			if want.EngineVersion != "" && id.EngineVersion != want.EngineVersion {
				mism = append(mism, fmt.Sprintf("engine version: requested %q, running %q", want.EngineVersion, id.EngineVersion))
			}
		case "context_length":
			if want.ContextLength > 0 && id.ContextLength != want.ContextLength {
				mism = append(mism, fmt.Sprintf("context length: requested %d, served %d", want.ContextLength, id.ContextLength))
			}
		case "parallel":
			if want.TensorParallel > 0 && id.TensorParallel != want.TensorParallel {
				mism = append(mism, fmt.Sprintf("tensor parallel: requested %d, running %d", want.TensorParallel, id.TensorParallel))
			}
		}
	}
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.Engine.ServedModel = id.Model
		if id.Revision != "" {
			m.Engine.Revision = id.Revision
		}
		if id.EngineVersion != "" {
			m.Engine.Version = id.EngineVersion
		}
		if id.ContextLength > 0 {
			m.Engine.ContextLength = id.ContextLength
		}
		if id.TensorParallel > 0 {
			m.Engine.TensorParallel = id.TensorParallel
		}
	}); err != nil {
		return err
	}
	if len(mism) > 0 {
		return fmt.Errorf("identity check failed before any formal request: %s", strings.Join(mism, "; "))
	}
	return nil
}

// send runs requests through the load generator, archiving each as it
// finishes, and returns the latest done_at. An engine that exits during the
// stage ends it with an error.
func send(ctx context.Context, rc *workflow.RunContext, d *Deps, stage string, lc loadgen.Config, reqs []openai.Request) (float64, error) {
	if d.Client == nil {
		return 0, fmt.Errorf("no client: the engine was not started")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan struct{})
	go func() {
		select {
		case <-d.Engine.Exited():
			close(exited)
			cancel()
		case <-ctx.Done():
		}
	}()
	var lastDone float64
	var sinkErr error
	failed := false
	sink := func(r archive.Request) {
		if r.DoneAt > lastDone {
			lastDone = r.DoneAt
		}
		failed = failed || !r.OK
		if err := rc.Out.AppendRequest(r); err != nil && sinkErr == nil {
			sinkErr = err
			cancel()
		}
	}
	total := len(reqs)
	err := loadgen.Run(ctx, lc, reqs, d.Client, sink, func(p loadgen.Progress) { d.report(stage, p, total) })
	if failed && !d.External {
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
			return lastDone, sinkErr
		}
		return lastDone, err
	}
	if d.ExitError != nil {
		if xe := d.ExitError(); xe != nil {
			return lastDone, fmt.Errorf("during %s: %w", stage, xe)
		}
	}
	return lastDone, fmt.Errorf("engine %s exited on its own during %s", d.Engine.Kind(), stage)
}

// Prepare loads and freezes every request set the profile's steps use, so
// that a bad dataset is reported (with file:line) before anything runs.
func (d *Deps) Prepare(l *workflow.Loaded) error {
	d.sets = map[any]*workload.RequestSet{}
	for _, st := range l.Steps {
		var set *workload.RequestSet
		var err error
		switch c := st.Config.(type) {
		case *RequestsConfig:
			set, err = loadSet(d, c.Dataset, requestOptions(c))
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
		d.sets[st.Config] = set
	}
	return nil
}

// requestSet returns the set Prepare froze for a step, or loads it.
func (d *Deps) requestSet(cfg any, dataset string, opt workload.Options) (*workload.RequestSet, error) {
	if set, ok := d.sets[cfg]; ok {
		return set, nil
	}
	return loadSet(d, dataset, opt)
}

func requestOptions(c *RequestsConfig) workload.Options {
	opt := workload.Options{Count: c.Count, Seed: c.Seed, MaxTokens: c.MaxTokens, IgnoreEOS: c.IgnoreEOS, Repeat: true}
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
	for _, b := range workload.Builtins() {
		if b == dataset {
			return workload.LoadBuiltin(dataset, opt)
		}
	}
	return workload.Load(dataset, opt)
}

func runWarmup(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*WarmupConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if c.Requests == 0 {
		return nil
	}
	var reqs []openai.Request
	model := d.Model
	for i := 0; i < c.Requests; i++ {
		r := openai.Request{ID: fmt.Sprintf("warmup-%05d", i), Phase: "warmup", PromptID: "warmup", Model: model, Prompt: c.Prompt, MaxTokens: c.MaxTokens, Chat: d.Chat}
		if c.Temperature != nil {
			r.Temperature = *c.Temperature
		}
		reqs = append(reqs, r)
	}
	if c.Prompt == "" {
		set, err := d.requestSet(c, "chat", workload.Options{Count: c.Requests, Repeat: true, MaxTokens: c.MaxTokens})
		if err != nil {
			return fmt.Errorf("warm-up prompts: %w", err)
		}
		for i, r := range loadgen.FromSet(set, "warmup", model, d.Chat) {
			reqs[i].Prompt, reqs[i].Messages, reqs[i].MaxTokens, reqs[i].PromptID = r.Prompt, r.Messages, r.MaxTokens, r.PromptID
		}
	}
	conc := c.Concurrency
	if conc <= 0 {
		conc = c.Requests
	}
	rc.StageStart("warmup", rc.Clock.Now())
	if _, err := send(ctx, rc, d, "warmup", loadgen.Config{Mode: loadgen.Concurrency, Concurrency: conc}, reqs); err != nil {
		return err
	}
	return rc.StageEnd("warmup", rc.Clock.Now())
}

func runRequests(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*RequestsConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	set, err := d.requestSet(c, c.Dataset, requestOptions(c))
	if err != nil {
		return fmt.Errorf("request set: %w", err)
	}
	base := loadgen.FromSet(set, "formal", d.Model, d.Chat)
	var reqs []openai.Request
	for rep := 0; rep < c.Repeat; rep++ {
		for _, r := range base {
			if c.Repeat > 1 {
				r.ID = fmt.Sprintf("%s-r%d", r.ID, rep+1)
			}
			if c.Temperature != nil {
				r.Temperature = *c.Temperature
			}
			reqs = append(reqs, r)
		}
	}
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.RequestSet = archive.RequestSet{Source: set.Source, Format: set.Format, Count: len(reqs), SHA256: set.SHA256, Seed: set.Options.Seed}
	}); err != nil {
		return err
	}
	mode, err := loadgen.ParseMode(c.Mode)
	if err != nil {
		return err
	}
	lc := loadgen.Config{Mode: mode, Concurrency: c.Concurrency, Rate: c.Rate, Seed: c.Seed, MaxRequests: c.MaxRequests, MaxDuration: c.MaxDuration.D()}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	t0 := rc.Clock.Now()
	if _, open := rc.StageOpen("startup"); open {
		if err := rc.StageEnd("startup", t0); err != nil {
			return err
		}
	}
	rc.StageStart("formal", t0)
	d.throttled() // start a new throttle window
	last, err := send(ctx, rc, d, "formal", lc, reqs)
	if thr, why := d.throttled(); thr {
		rc.Log.Warn().Str("reason", why).Msg("GPU clocks were throttled during the formal requests")
		if e := rc.Event("throttled", rc.Clock.Now()); e != nil {
			return e
		}
		if e := rc.Out.UpdateMeta(func(m *archive.Meta) {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels["throttled"] = why
		}); e != nil {
			return e
		}
	}
	if last == 0 {
		last = rc.Clock.Now()
	}
	if err != nil {
		return err
	}
	if err := rc.StageEnd("formal", last); err != nil {
		return err
	}
	return d.sampleNow(ctx)
}

// StopEngine stops the engine once and records engine_exited.
func (d *Deps) StopEngine(ctx context.Context, rc *workflow.RunContext, grace time.Duration) (float64, error) {
	d.mu.Lock()
	if d.exitAt > 0 {
		t := d.exitAt
		d.mu.Unlock()
		return t, nil
	}
	d.mu.Unlock()
	if d.Engine == nil || d.External {
		return 0, nil
	}
	at, err := d.Engine.Stop(ctx, grace)
	t := rc.Clock.At(at)
	if at.IsZero() {
		t = rc.Clock.Now()
	}
	d.mu.Lock()
	d.exitAt = t
	d.mu.Unlock()
	if e := rc.Event("engine_exited", t); e != nil && err == nil {
		err = e
	}
	if xs, ok := d.Engine.(interface{ ExitStatus() string }); ok && xs.ExitStatus() != "" {
		if e := rc.Out.UpdateMeta(func(m *archive.Meta) {
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

func runRelease(ctx context.Context, rc *workflow.RunContext, cfg any) error {
	c := cfg.(*ReleaseConfig)
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if d.External {
		// Not ours to stop: no release stage.
		return d.sampleNow(ctx)
	}
	meta := rc.Out.Meta()
	from := rc.Clock.Now()
	if st, ok := meta.StageByName("formal"); ok {
		from = st.End
	}
	rc.StageStart("release", from)
	d.report("release", loadgen.Progress{}, 0)
	exitAt, err := d.StopEngine(ctx, rc, c.Grace.D())
	if err != nil {
		return fmt.Errorf("stop engine: %w", err)
	}
	if d.StopMetrics != nil {
		// The engine is gone: nothing left to scrape on the side path.
		if err := d.StopMetrics(); err != nil {
			return fmt.Errorf("engine metrics: %w", err)
		}
	}
	if !c.WaitBaseline || d.sampler == nil {
		if err := d.sampleNow(ctx); err != nil {
			return err
		}
		end := rc.Clock.Now()
		if exitAt > end {
			end = exitAt
		}
		return rc.StageEnd("release", end)
	}
	bs, ok := meta.StageByName("baseline")
	if !ok {
		return fmt.Errorf("release wait needs a baseline stage (add a baseline step or set wait_baseline: false)")
	}
	deadline := from + c.MaxWait.Seconds()
	tick := d.sampler.Interval()
	for {
		if err := sleep(ctx, tick); err != nil {
			return err
		}
		now := rc.Clock.Now()
		closed, err := d.releaseClosed(bs, from, now, exitAt, c)
		if err != nil {
			return err
		}
		if closed || now >= deadline {
			if !closed {
				rc.Log.Warn().Msgf("release did not close within max_wait %s", c.MaxWait)
			}
			// The stage ends at the last sample, so every formula over it
			// has data to its end.
			if err := d.sampleNow(ctx); err != nil {
				return err
			}
			return rc.StageEnd("release", d.lastSampleT(now))
		}
	}
}

// lastSampleT is the time of the newest sample common to every device
// (the earliest of each device's latest sample), or def without samples.
func (d *Deps) lastSampleT(def float64) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	latest := map[string]float64{}
	for _, s := range d.samples {
		if s.T > latest[s.Device] {
			latest[s.Device] = s.T
		}
	}
	t := def
	first := true
	for _, v := range latest {
		if first || v < t {
			t, first = v, false
		}
	}
	return t
}

// releaseClosed runs the release-complete detection of metricdefs over the
// samples so far — the same code analyze uses on the archive.
func (d *Deps) releaseClosed(bs archive.Stage, from, now, exitAt float64, c *ReleaseConfig) (bool, error) {
	d.mu.Lock()
	samples := append([]archive.PowerSample(nil), d.samples...)
	d.mu.Unlock()
	pd, err := metricdefs.NewPowerData(samples)
	if err != nil {
		return false, err
	}
	pw := map[string]float64{}
	mem := map[string]int64{}
	devs := pd.Devices()
	sort.Strings(devs)
	for _, dev := range devs {
		w, err := pd.MeanPower(dev, bs.Start, bs.End)
		if err != nil {
			return false, fmt.Errorf("baseline of %s: %w", dev, err)
		}
		pw[dev] = w
		if m, ok := pd.MaxMem(dev, bs.Start, bs.End); ok {
			mem[dev] = m
		}
	}
	r, err := pd.Release(metricdefs.ReleaseParams{From: from, End: now, Baseline: pw, MemBaseline: mem,
		MemToleranceBytes: int64(c.MemToleranceMB) << 20, Tolerance: c.Tolerance, HoldS: c.Hold.Seconds(), ExitedAt: exitAt})
	if err != nil {
		return false, err
	}
	return r.Closed, nil
}

func runArchive(ctx context.Context, rc *workflow.RunContext, _ any) error {
	d, err := deps(rc)
	if err != nil {
		return err
	}
	if err := d.StopSampling(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	d.RecordAnomalies(rc)
	if d.StopMetrics != nil {
		if err := d.StopMetrics(); err != nil {
			return fmt.Errorf("engine metrics: %w", err)
		}
	}
	return Finish(ctx, rc, archive.StatusComplete, "")
}

// Finish closes a run: open stages end now, status and reason are written,
// the data is flushed, and — for a complete run — the profile is evaluated
// over the archive as written (exactly what `joulebench analyze` does) and
// results.json is written; a run failing an exclude check is marked
// excluded, never deleted.
func Finish(ctx context.Context, rc *workflow.RunContext, status, reason string) error {
	now := rc.Clock.Now()
	rc.CloseOpenStages(now)
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.Status, m.Reason, m.EndedAt = status, reason, now
	}); err != nil {
		return err
	}
	if err := rc.Out.Flush(); err != nil {
		return err
	}
	if status != archive.StatusComplete {
		return nil
	}
	run, err := archive.Load(rc.Out.Dir())
	if err != nil {
		return fmt.Errorf("re-read archive: %w", err)
	}
	res, evalErr := workflow.Evaluate(ctx, rc.Loaded, run)
	if res == nil {
		return evalErr
	}
	if err := rc.Out.WriteResults(*res); err != nil {
		return err
	}
	if res.Excluded {
		if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
			m.Excluded, m.ExcludeReason = true, res.ExcludeReason
		}); err != nil {
			return err
		}
	}
	if evalErr != nil {
		rc.Log.Warn().Err(evalErr).Msg("some formulas could not be evaluated")
	}
	return nil
}
